/**
 * What a build is, without the server: its release and the storage format it writes (protocol
 * §16.4). Published as `@rivulet/server/release` so that `rivulet --version` loads this module and
 * the schema's, not the whole Node host.
 */
export { VERSION } from './version.js';
export { FORMAT_VERSION } from './engine/schema.js';

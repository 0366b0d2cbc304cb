/** Live connections and waitForEvent (protocol §19). */
export { ConnectionHub, type ConnectionHandle, type ConnectionHubOptions, type OpenExtras } from './hub.js';
export { defaultConnectionLimits, type BatchCallback, type ConnectionLimits } from './connection-spec.js';
export { waitForEvent } from './wait.js';

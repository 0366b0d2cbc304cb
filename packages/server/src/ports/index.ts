export type * from './storage.js';
export * from './timer.js';
export * from './clock.js';
export type * from './directory.js';
export type * from './outbound.js';
export type * from './itx.js';
export * from './logger.js';

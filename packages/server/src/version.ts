/** The server's version, reported by /v1/openapi.json and `rivulet --version`. */
export const VERSION = '0.1.0';

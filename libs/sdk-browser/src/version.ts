/** Library identity sent as `context.library` on every event (kept equal to package.json by a unit test). */
export const LIBRARY_NAME = '@svc/sdk-browser';
export const VERSION = '1.5.0';

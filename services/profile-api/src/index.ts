export * from './config';
export * from './cursor';
export * from './messages';
export * from './migrations';
export * from './params';
export * from './routes';
export * from './routes-setup';
export * from './store';

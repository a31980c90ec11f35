export * from './config';
export * from './cursor';
export * from './messages';
export * from './params';
export * from './routes';
export * from './routes-setup';
export * from './store';
export * from './service';

export * from './migrations';
export * from './publisher';
export * from './routes';
export * from './routes-setup';
export * from './store';
export * from './service';

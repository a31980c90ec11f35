export { allMigrations } from './migrations';

import { loadSettings } from './src/config/settings';
import { MIGRATIONS_DIR } from './src/data/db';

// For the knex CLI; the application builds its own instance from the same settings.
const settings = loadSettings();

export default {
  client: 'pg',
  connection: settings.DATABASE_URL,
  migrations: { directory: MIGRATIONS_DIR, loadExtensions: ['.ts', '.js'] },
};

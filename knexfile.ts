import { loadSettings } from './src/config/settings';
import { migrationSource, MIGRATIONS_TABLE } from './src/data/migrations';

// For the knex CLI; the application builds its own instance from the same settings.
const settings = loadSettings();

export default {
  client: 'pg',
  connection: settings.DATABASE_URL,
  // The same extension-free migration names as the application (src/data/migrations.ts).
  migrations: { migrationSource: migrationSource(), tableName: MIGRATIONS_TABLE },
};

import fs from 'node:fs';
import path from 'node:path';

/**
 * The folder that holds package.json and db/ in a checkout or the image. The sources live in
 * src/ one level below it; the compiled build in dist/src/ two levels below (tsc also leaves a
 * copy of package.json in dist/, so "the nearest package.json" would be the wrong test).
 */
export const PROJECT_ROOT = projectRoot(path.resolve(__dirname, '../..'));

function projectRoot(above: string): string {
  return path.basename(above) === 'dist' && fs.existsSync(path.join(above, '..', 'db')) ? path.dirname(above) : above;
}

/** The nested package that brings the browser bundle of /api/docs (scripts/install-packages.js). */
export const API_REFERENCE_PACKAGE = path.join(PROJECT_ROOT, 'packages', 'api-reference');

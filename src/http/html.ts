/**
 * The text/html representation of small services: a plain, fully escaped page with a table
 * of the fields. Nested objects render as nested tables, so every value stays readable.
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function renderValue(value: unknown): string {
  if (value === null || value === undefined) return '<span class="none">—</span>';
  if (Array.isArray(value)) {
    if (value.length === 0) return '<span class="none">(none)</span>';
    if (value.every(isPlainObject)) return renderTable(value as Record<string, unknown>[]);
    return `<ul>${value.map((v) => `<li>${renderValue(v)}</li>`).join('')}</ul>`;
  }
  if (isPlainObject(value)) return renderObject(value);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return escapeHtml(String(value));
}

function renderObject(obj: Record<string, unknown>): string {
  const rows = Object.entries(obj)
    .map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${renderValue(v)}</td></tr>`)
    .join('');
  return `<table class="record"><tbody>${rows}</tbody></table>`;
}

function renderTable(items: Record<string, unknown>[]): string {
  const columns: string[] = [];
  for (const item of items) for (const k of Object.keys(item)) if (!columns.includes(k)) columns.push(k);
  const head = columns.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join('');
  const body = items
    .map((item) => `<tr>${columns.map((c) => `<td>${renderValue(item[c])}</td>`).join('')}</tr>`)
    .join('');
  return `<table class="list"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

const STYLE = `
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d232b;background:#fff}
h1{font-size:1.4rem;margin:0 0 .25rem}p.meta{color:#5b6570;margin:0 0 1.25rem;font-size:.9rem}
table{border-collapse:collapse;font-size:.9rem;margin:.1rem 0}
th,td{border:1px solid #d6dbe0;padding:.3rem .55rem;text-align:left;vertical-align:top}
thead th{background:#eef1f4;position:sticky;top:0}th[scope=row]{background:#f6f8fa;font-weight:600;white-space:nowrap}
tbody tr:nth-child(even) td{background:#fafbfc}.none{color:#97a0aa}ul{margin:0;padding-left:1.1rem}
`;

export function renderHtmlPage(title: string, value: unknown): string {
  const count = Array.isArray(value) ? `<p class="meta">${value.length} item${value.length === 1 ? '' : 's'}</p>` : '';
  const body = Array.isArray(value) && value.length === 0 ? '<p class="none">No items.</p>' : renderValue(value);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · lead-call-api</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>${count}<main>${body}</main></body></html>
`;
}

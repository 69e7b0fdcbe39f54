/**
 * The text/html representation of small services: a plain, fully escaped page with a table of
 * the fields. Lists render as a table with one row per item; nested objects render as nested
 * tables (a one-property reference such as `{ orgCode }` inline); DateTime values show a
 * readable wall time inside a <time> element carrying the exact ISO value. Every string that
 * comes from data passes through escapeHtml, so no value can become markup.
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);
}

// The API's DateTime output: `2026-05-06T10:16:41.000+02:00` (also accepts `Z` and no millis).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/**
 * `Wed 6 May 2026, 10:16:41 (+02:00)`: the wall time the value itself states (platform time),
 * so the page reads the same wherever it is opened; the exact value stays in `datetime`.
 */
function renderDateTime(iso: string, m: RegExpExecArray): string {
  const [, y, mo, d, h, mi, s, frac, offset] = m;
  const month = +mo! - 1;
  const day = +d!;
  const weekday = WEEKDAYS[new Date(Date.UTC(+y!, month, day)).getUTCDay()];
  const millis = frac && /[1-9]/.test(frac) ? `.${frac.slice(0, 3)}` : '';
  const readable = `${weekday} ${day} ${MONTHS[month]} ${y}, ${h}:${mi}:${s}${millis}`;
  const zone = offset === 'Z' ? 'UTC' : offset;
  const value = escapeHtml(iso);
  return `<time datetime="${value}" title="${value}">${readable} <span class="offset">(${zone})</span></time>`;
}

// ISO 8601 durations as the API writes them (`PT12M42S`, `P1DT2H`).
const DURATION = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

function renderDuration(value: string, m: RegExpExecArray): string | undefined {
  const units = ['y', 'mo', 'd', 'h', 'min', 's'];
  const parts = m.slice(1).flatMap((n, i) => (n === undefined ? [] : [`${n} ${units[i]}`]));
  if (parts.length === 0 || value.endsWith('T')) return undefined;
  return `<span class="duration" title="${escapeHtml(value)}">${escapeHtml(value)} <span class="readable">(${parts.join(' ')})</span></span>`;
}

function renderString(value: string): string {
  const dt = DATE_TIME.exec(value);
  if (dt) return renderDateTime(value, dt);
  const du = DURATION.exec(value);
  if (du) {
    const rendered = renderDuration(value, du);
    if (rendered) return rendered;
  }
  return escapeHtml(value);
}

function renderValue(value: unknown): string {
  if (value === null || value === undefined) return '<span class="none">—</span>';
  if (Array.isArray(value)) {
    if (value.length === 0) return '<span class="none">(none)</span>';
    if (value.every(isPlainObject)) return renderTable(value);
    return `<ul>${value.map((v) => `<li>${renderValue(v)}</li>`).join('')}</ul>`;
  }
  if (value instanceof Date) return renderString(value.toISOString());
  if (isPlainObject(value)) return renderObject(value);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number') return `<span class="number">${escapeHtml(String(value))}</span>`;
  if (typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function') return renderString(String(value));
  return renderString(value as string);
}

function renderObject(obj: Record<string, unknown>): string {
  const entries = Object.entries(obj);
  if (entries.length === 0) return '<span class="none">(none)</span>';
  // A compact reference (`{ orgCode }`, `{ uniqueId }`) reads best on one line.
  if (entries.length === 1) {
    const [key, only] = entries[0]!;
    if (!isPlainObject(only) && !Array.isArray(only))
      return `<span class="ref"><span class="key">${escapeHtml(key)}:</span> ${renderValue(only)}</span>`;
  }
  const rows = entries.map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${renderValue(v)}</td></tr>`).join('');
  return `<table class="record"><tbody>${rows}</tbody></table>`;
}

function renderTable(items: Record<string, unknown>[]): string {
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    for (const k of Object.keys(item)) {
      if (!seen.has(k)) {
        seen.add(k);
        columns.push(k);
      }
    }
  }
  const head = columns.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join('');
  const body = items
    .map((item) => `<tr>${columns.map((c) => `<td data-field="${escapeHtml(c)}">${renderValue(item[c])}</td>`).join('')}</tr>`)
    .join('');
  return `<div class="scroll"><table class="list"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

export const PAGE_STYLE = `
:root{color-scheme:light}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem;color:#1d232b;background:#fff;line-height:1.4}
h1{font-size:1.4rem;margin:0 0 .25rem}p.meta{color:#5b6570;margin:0 0 1.25rem;font-size:.9rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.9rem;margin:.1rem 0}
th,td{border:1px solid #d6dbe0;padding:.3rem .55rem;text-align:left;vertical-align:top}
td{white-space:pre-wrap;overflow-wrap:break-word;max-width:40rem}
thead th{background:#eef1f4;position:sticky;top:0;white-space:nowrap}
th[scope=row]{background:#f6f8fa;font-weight:600;white-space:nowrap}
tbody tr:nth-child(even)>td{background:#fafbfc}
td table{font-size:.85rem}td table thead th{position:static}
.none{color:#97a0aa}.offset,.readable{color:#5b6570;font-size:.85em}.key{color:#5b6570}
.number{font-variant-numeric:tabular-nums}
time{white-space:normal}
ul{margin:0;padding-left:1.1rem}
code{background:#f3f5f7;padding:0 .2rem;border-radius:3px}
`;

/** The page shell: a title, optional meta line, and the given (already escaped) body HTML. */
export function renderPage(title: string, bodyHtml: string, extraStyle = ''): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · lead-call-api</title><style>${PAGE_STYLE}${extraStyle}</style></head>
<body>${bodyHtml}</body></html>
`;
}

export function renderHtmlPage(title: string, value: unknown): string {
  const count = Array.isArray(value) ? `<p class="meta">${value.length} item${value.length === 1 ? '' : 's'}</p>` : '';
  const body = Array.isArray(value) && value.length === 0 ? '<p class="none">No items.</p>' : renderValue(value);
  return renderPage(title, `<h1>${escapeHtml(title)}</h1>${count}<main>${body}</main>`);
}

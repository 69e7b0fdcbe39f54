import type { DateTimeFormatName } from './enums';
import { formatDateTime } from './datetime';

/** An entry of a do-not-call list (docs/decisions.md, Do-not-call), as stored. */
export interface DoNotCallEntry {
  /** E.164. */
  phoneNumber: string;
  /** The project's name; null for an entry of every project (and for global entries). */
  project: string | null;
  projectUniqueId: string | null;
  note: string | null;
  expiresTime: Date | null;
  createdTime: Date;
  modifiedTime: Date;
}

/** The entry as the API writes it: absent values left out, DateTimes in the answer's format. */
export function renderDoNotCallEntry(entry: DoNotCallEntry, zone: string, format: DateTimeFormatName): Record<string, unknown> {
  return {
    phoneNumber: entry.phoneNumber,
    ...(entry.project === null ? {} : { project: entry.project, projectUniqueId: entry.projectUniqueId }),
    ...(entry.note === null ? {} : { note: entry.note }),
    ...(entry.expiresTime === null ? {} : { expiresTime: formatDateTime(entry.expiresTime, zone, format) }),
    createdTime: formatDateTime(entry.createdTime, zone, format),
    modifiedTime: formatDateTime(entry.modifiedTime, zone, format),
  };
}

import { toE164 } from '../../domain/phoneNumber';
import type pg from 'pg';
import type { DefinitionKind } from './campaigns';
import { copyEscape, copyRows, copyTimestamp } from '../../data/copyIn';
import { sequenceNumber } from './copyWriter';
import { FLAG_IN_PROGRESS, INDEX_BITS } from './plan';
import type { Prng } from './prng';
import type { RunRows } from './runRows';
import { ascii, CITIES, COMPANY_SUFFIXES, COMPANY_WORDS, FIRST_NAMES, LAST_NAMES, SEGMENTS } from './vocabulary';

/** What the call rows repeat of their lead, by lead index. */
export interface LeadContacts {
  phone: string[];
  key: string[];
}

/**
 * COPYs the leads with their planned status, attempts and times; who uploaded, first processed
 * and last modified each comes from the plan (the last finished call's agent). Reads the calls
 * by call index: run it before sortCallsByStart.
 */
export async function copyLeads(conn: pg.PoolClient, run: RunRows, data: Prng, onRows: (n: number) => void): Promise<LeadContacts> {
  const { prefix: P, leadBase, campaigns, users, leads, calls } = run;
  const windowStartMs = run.window.startMs;
  const L = leads.count;
  const { campaign: leadCampaign, pool: leadPool, uploader: leadUploader, callCount, offset } = leads;
  const {
    status: leadStatus,
    closure: leadClosure,
    attempts: leadAttempts,
    uploadMs: leadUploadMs,
    changedMs: leadChangedMs,
    clockMs: leadClockMs,
  } = leads;
  const { sortKey, msPart: callMsPart, flags: callFlags, user: callUser } = calls;
  const leadPhone = new Array<string>(L);
  const leadKey = new Array<string>(L);
  await copyRows(
    conn,
    'leads',
    [
      'id',
      'unique_id',
      'campaign_id',
      'pool_id',
      'status',
      'closure',
      'priority',
      'phone_number',
      'phone_e164',
      'external_key',
      'data',
      'attempts',
      'upload_time',
      'last_modified_time',
      'first_processed_time',
      'status_changed_time',
      'owner_org_unit_id',
      'uploaded_by_user_id',
      'last_modified_by_user_id',
      'first_processed_by_user_id',
    ],
    function* () {
      for (let l = 0; l < L; l++) {
        const c = campaigns[leadCampaign[l]!]!;
        const lead = leadData(data, c.spec.definition, l, P);
        leadPhone[l] = lead.phone;
        leadKey[l] = lead.key;
        const n = callCount[l]!;
        const uploader = users[leadUploader[l]!]!;
        let first = '\\N\t';
        let lastBy = String(uploader.id);
        if (n > 0) {
          const i0 = offset[l]!;
          first = `${copyTimestamp(windowStartMs + Math.floor(sortKey[i0]! / INDEX_BITS) * 1000 + callMsPart[i0]!)}\t`;
          let last = offset[l]! + n - 1;
          if (callFlags[last]! & FLAG_IN_PROGRESS && n > 1) last -= 1;
          lastBy = String(users[callUser[last]!]!.id);
        }
        const firstBy = n > 0 ? String(users[callUser[offset[l]!]!]!.id) : '\\N';
        yield (
          `${leadBase + l}\t${P}-l${sequenceNumber(l)}\t${c.id}\t${c.pools[leadPool[l]!]!.id}\t${leadStatus[l]}\t${leadClosure[l]}\t${data.chance(0.9) ? 0 : data.between(1, 5)}\t` +
          `${copyEscape(lead.phone)}\t${phoneE164(lead.phone)}\t${copyEscape(lead.key)}\t${copyEscape(lead.json)}\t${leadAttempts[l]}\t${copyTimestamp(leadUploadMs[l]!)}\t${copyTimestamp(leadChangedMs[l]!)}\t${first}` +
          `${copyTimestamp(leadClockMs[l]!)}\t${uploader.ownerUnitId}\t${uploader.id}\t${lastBy}\t${firstBy}\n`
        );
      }
    },
    onRows,
  );
  return { phone: leadPhone, key: leadKey };
}

/** The duplicate check's phone key as a COPY value (numbers here carry their country code). */
function phoneE164(phone: string): string {
  const e164 = toE164(phone, 'DK');
  return e164 === undefined ? '\\N' : copyEscape(e164);
}

/** One lead's data (field name → string), its phone number and its external key. */
function leadData(r: Prng, definition: DefinitionKind, l: number, P: string): { json: string; phone: string; key: string } {
  const phone = `+${r.pick(['45', '45', '45', '46', '47'])} ${r.between(20, 99)} ${r.between(10, 99)} ${r.between(10, 99)} ${r.between(10, 99)}`;
  const first = r.pick(FIRST_NAMES);
  const last = r.pick(LAST_NAMES);
  const data: Record<string, string> = {};
  let key: string;
  if (definition === 0) {
    const company = `${r.pick(COMPANY_WORDS)}${r.pick(COMPANY_WORDS).toLowerCase()} ${r.pick(COMPANY_SUFFIXES)}`;
    key = `CU-${P}-${l + 1}`;
    data.CompanyName = company;
    data.ContactName = `${first} ${last}`;
    data.Phone = phone;
    if (r.chance(0.5)) data.Mobile = `+45 ${r.between(20, 99)} ${r.between(10, 99)} ${r.between(10, 99)} ${r.between(10, 99)}`;
    if (r.chance(0.8)) data.Email = `${ascii(first)}.${ascii(last)}@${ascii(company.split(' ')[0]!)}.example.com`;
    data.Employees = String(r.between(1, 5000));
    if (r.chance(0.6))
      data.CustomerSince = `${r.between(2005, 2025)}-${String(r.between(1, 12)).padStart(2, '0')}-${String(r.between(1, 28)).padStart(2, '0')}`;
    data.CustomerNumber = key;
    if (r.chance(0.4))
      data.LastOrderAt = `2026-${String(r.between(1, 9)).padStart(2, '0')}-${String(r.between(1, 28)).padStart(2, '0')}T${String(r.between(8, 17)).padStart(2, '0')}:${String(r.between(0, 59)).padStart(2, '0')}:00`;
    data.Newsletter = r.chance(0.3) ? 'true' : 'false';
    if (r.chance(0.3)) data.PartnerNotes = `Referred by partner ${r.pick(LAST_NAMES)}`;
    data.CreditScore = String(r.between(300, 850));
  } else {
    key = `M${P}-${l + 1}`;
    const age = r.between(18, 90);
    data.FirstName = first;
    data.LastName = last;
    data.Phone = phone;
    if (r.chance(0.7)) data.Email = `${ascii(first)}.${ascii(last)}${r.between(1, 999)}@example.com`;
    if (r.chance(0.7))
      data.BirthDate = `${2025 - age}-${String(r.between(1, 12)).padStart(2, '0')}-${String(r.between(1, 28)).padStart(2, '0')}`;
    data.Age = String(age);
    data.City = r.pick(CITIES);
    data.MemberNo = key;
    if (r.chance(0.5)) data.PartnerSegment = r.pick(SEGMENTS);
    data.InternalRating = String(r.between(1, 10));
  }
  return { json: JSON.stringify(data), phone, key };
}

/** The fixed words synthetic people, companies and places are made of (Nordic, with æøå). */

export const FIRST_NAMES = [
  'Anders',
  'Anne',
  'Birgitte',
  'Bo',
  'Camilla',
  'Christian',
  'Dorthe',
  'Emil',
  'Freja',
  'Frederik',
  'Gitte',
  'Hanne',
  'Ida',
  'Jens',
  'Jette',
  'Kasper',
  'Karin',
  'Lars',
  'Line',
  'Mads',
  'Maja',
  'Mette',
  'Morten',
  'Niels',
  'Nanna',
  'Ole',
  'Pernille',
  'Peter',
  'Rasmus',
  'Signe',
  'Søren',
  'Sofie',
  'Thomas',
  'Tove',
  'Ulla',
  'Åse',
  'Øystein',
  'Ingrid',
  'Henrik',
  'Lotte',
  'Mikkel',
  'Astrid',
  'Bjørn',
  'Linnéa',
  'Erik',
  'Kari',
  'Johan',
  'Marianne',
];
export const LAST_NAMES = [
  'Hansen',
  'Jensen',
  'Nielsen',
  'Pedersen',
  'Andersen',
  'Christensen',
  'Larsen',
  'Sørensen',
  'Rasmussen',
  'Jørgensen',
  'Petersen',
  'Madsen',
  'Kristensen',
  'Olsen',
  'Thomsen',
  'Poulsen',
  'Johansen',
  'Møller',
  'Mortensen',
  'Karlsson',
  'Lindqvist',
  'Berg',
  'Haugen',
  'Dahl',
  'Lund',
  'Holm',
  'Bakke',
  'Østergaard',
  'Frandsen',
  'Kjær',
];
export const COMPANY_WORDS = [
  'Nord',
  'Vest',
  'Hav',
  'Fjord',
  'Lys',
  'Skov',
  'Bygge',
  'Data',
  'Energi',
  'Transport',
  'Medico',
  'Agro',
  'Fin',
  'Logi',
  'Tekno',
];
export const COMPANY_SUFFIXES = ['A/S', 'ApS', 'AB', 'AS', 'I/S', 'Holding A/S'];
export const CITIES = ['København', 'Aarhus', 'Odense', 'Aalborg', 'Malmö', 'Göteborg', 'Oslo', 'Bergen', 'Esbjerg', 'Roskilde'];
export const SEGMENTS = ['Gold', 'Silver', 'Bronze', 'Partner+', 'Standard'];

export const COUNTRIES = ['Danmark', 'Sverige', 'Norge'];
/** The business lines: departments, teams and campaigns each belong to one. */
export const CATEGORIES = ['Sales', 'Support', 'Retail'] as const;
export type Category = (typeof CATEGORIES)[number];

/** A name as lowercase ASCII letters, for usernames and e-mail addresses (æ → ae, ø → oe, å → aa). */
export function ascii(name: string): string {
  return name
    .toLowerCase()
    .replace(/æ/g, 'ae')
    .replace(/ø/g, 'oe')
    .replace(/å/g, 'aa')
    .normalize('NFD')
    .replace(/[^a-z]/g, '');
}

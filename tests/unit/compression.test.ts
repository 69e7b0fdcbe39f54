import type { Request } from 'express';
import { negotiateCoding } from '../../src/http/compression';

const codingFor = (acceptEncoding: string) => negotiateCoding({ headers: { 'accept-encoding': acceptEncoding } } as unknown as Request);

describe('negotiateCoding', () => {
  it('when a client allows any coding only through *, then it gets gzip, which every such client reads', () => {
    expect(codingFor('*')).toBe('gzip');
    expect(codingFor('identity;q=0.5, *')).toBe('gzip');
  });

  it('when a client names codings it rates alike, then zstd, br and gzip go in that order, before those * allows', () => {
    expect(codingFor('gzip, deflate, br, zstd')).toBe('zstd');
    expect(codingFor('gzip, deflate, br')).toBe('br');
    expect(codingFor('br, *')).toBe('br');
    expect(codingFor('gzip, *')).toBe('gzip');
  });

  it('when a client rates codings, then its q-values decide', () => {
    expect(codingFor('zstd;q=0.5, gzip')).toBe('gzip');
    expect(codingFor('*, gzip;q=0')).toBe('br');
    expect(codingFor('identity')).toBeUndefined();
  });
});

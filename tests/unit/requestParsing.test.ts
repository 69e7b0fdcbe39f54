import { z } from 'zod';
import { normalizeQuery, parseQuery, parseBody } from '../../src/http/requestParsing';
import { HttpProblem } from '../../src/http/problem';

const schema = z.object({
  OrgCode: z.string(),
  Include: z.array(z.string()).optional(),
  CsvFieldSeparator: z.string().optional(),
  Limit: z.coerce.number().int().positive().optional(),
});

/** What `f` throws; undefined when it returns. */
function thrownBy(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe('query parameters', () => {
  it('when names come in any casing, then they map onto the schema names', () => {
    expect(normalizeQuery({ orgcode: 'A', LIMIT: '5' }, schema)).toEqual({ OrgCode: 'A', Limit: '5' });
  });

  it('when a list comes comma-separated, repeated, or both, then the items are merged and trimmed', () => {
    expect(normalizeQuery({ OrgCode: 'A', include: ['user, campaign', 'parent'], INCLUDE: 'x,,' }, schema).Include).toEqual([
      'user',
      'campaign',
      'parent',
      'x',
    ]);
  });

  it('when a list comes in the bracket forms of axios, jQuery or PHP clients, then those are the same parameter', () => {
    expect(normalizeQuery({ OrgCode: 'A', 'Include[]': ['user', 'campaign'] }, schema).Include).toEqual(['user', 'campaign']);
    expect(normalizeQuery({ 'orgCode[]': 'A', 'include[0]': 'user', 'include[1]': 'campaign' }, schema)).toEqual({
      OrgCode: 'A',
      Include: ['user', 'campaign'],
    });
    expect(normalizeQuery({ OrgCode: 'A', 'Include[x]': 'user' }, schema).Include).toBeUndefined();
  });

  it('when a scalar is a tab or a space, then it is kept as given (a CSV separator)', () => {
    expect(normalizeQuery({ OrgCode: 'A', csvfieldseparator: '\t' }, schema).CsvFieldSeparator).toBe('\t');
    expect(normalizeQuery({ OrgCode: 'A', csvfieldseparator: ' ' }, schema).CsvFieldSeparator).toBe(' ');
  });

  it('when a scalar is given twice, then the first value wins; an empty value counts as absent', () => {
    expect(normalizeQuery({ OrgCode: ['first', 'second'], Limit: '' }, schema)).toEqual({ OrgCode: 'first' });
  });

  it('when unknown parameters are sent, then they are ignored', () => {
    expect(parseQuery(schema, { OrgCode: 'A', skip: '10', take: '5', PageSize: '100' })).toEqual({ OrgCode: 'A' });
  });

  it('when a required parameter is missing, then a missing_parameter problem names it', () => {
    const err = (() => {
      try {
        parseQuery(schema, {});
      } catch (e) {
        return e as HttpProblem;
      }
    })();
    expect(err).toBeInstanceOf(HttpProblem);
    expect(err!.code).toBe('missing_parameter');
    expect(err!.errors).toEqual([{ parameter: 'OrgCode', message: 'is required' }]);
  });

  it('when a value is bad, then an invalid_parameter problem names the parameter', () => {
    expect(thrownBy(() => parseQuery(schema, { OrgCode: 'A', Limit: '-3' }))).toEqual(
      expect.objectContaining({ code: 'invalid_parameter' }),
    );
    // A number that is not one coerces to NaN: still a bad value, not a missing one.
    expect(thrownBy(() => parseQuery(schema, { OrgCode: 'A', Limit: 'ten' }))).toEqual(
      expect.objectContaining({ code: 'invalid_parameter', errors: [expect.objectContaining({ parameter: 'Limit' })] }),
    );
  });
});

describe('JSON bodies', () => {
  const body = z.object({ CampaignCode: z.string(), Data: z.record(z.string(), z.string()), LeadPool: z.string().optional() });

  it('when property names differ in case or use an alias, then they map onto the schema names', () => {
    expect(parseBody(body, { campaigncode: 'C', data: { a: 'b' }, pool: 'P' }, { Pool: 'LeadPool' })).toEqual({
      CampaignCode: 'C',
      Data: { a: 'b' },
      LeadPool: 'P',
    });
  });

  it('when two keys name the same property, then the same value is taken and two different values are invalid_body naming both keys', () => {
    const aliases = { Pool: 'LeadPool' };
    expect(parseBody(body, { CampaignCode: 'C', campaignCode: 'C', Data: { a: 'b' }, data: { a: 'b' } })).toEqual({
      CampaignCode: 'C',
      Data: { a: 'b' },
    });
    const twoPools = thrownBy(() => parseBody(body, { CampaignCode: 'C', Data: {}, LeadPool: 'A', pool: 'B' }, aliases));
    expect(twoPools).toEqual(expect.objectContaining({ code: 'invalid_body' }));
    expect((twoPools as HttpProblem).errors).toEqual([
      { field: 'LeadPool', message: 'LeadPool and pool name the same property with different values: send one of them' },
    ]);
    const many = z.union([body, z.array(body)]);
    const second = thrownBy(() =>
      parseBody(many, [
        { CampaignCode: 'C', Data: {} },
        { CampaignCode: 'C', campaigncode: 'D', Data: {} },
      ]),
    );
    expect((second as HttpProblem).errors).toEqual([expect.objectContaining({ field: '[1].CampaignCode' })]);
  });

  it('when the body is not an object, then invalid_body', () => {
    expect(thrownBy(() => parseBody(body, [1, 2]))).toEqual(expect.objectContaining({ code: 'invalid_body' }));
    expect(thrownBy(() => parseBody(body, undefined))).toEqual(expect.objectContaining({ code: 'invalid_body' }));
  });
});

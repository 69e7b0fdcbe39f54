import { classifyAddress, isAllowListed, knownAddress, refusedAddressMessage } from '../../src/domain/hookAddress';
import { DEFAULT_RETRY_POLICY, nextAttemptTime, retryDelayMs, shouldDisableHook } from '../../src/domain/hookRetry';
import { contentTemplateProblems, HookMessage, renderHookRequest, unknownPlaceholders, urlTemplateProblems } from '../../src/domain/hooks';

const message: HookMessage = {
  type: 'lead.statusChanged',
  timestamp: '2026-05-06T10:16:41.000+02:00',
  data: { uniqueId: 'L1', status: 'UserProcessed' },
  values: { UniqueId: 'L1', LeadStatus: 'UserProcessed', AgentEmail: 'a+b@example.com' },
  dataFields: { Name: 'Ærø "Quote" \\ & = ?', Email: 'x@example.com' },
};

describe('hook templates', () => {
  it('when a JSON template holds values with quotes and backslashes, then the body is valid JSON with the values intact', () => {
    const r = renderHookRequest(
      {
        url: 'https://x.example.com/{UniqueId}',
        method: 'POST',
        format: 'Json',
        contentTemplate: '{"name":"{data.name}","who":"{AgentEmail}","n":[1,"{LeadStatus}"]}',
        standardTemplate: 'Standard',
      },
      message,
    );
    expect(JSON.parse(r.body)).toEqual({ name: 'Ærø "Quote" \\ & = ?', who: 'a+b@example.com', n: [1, 'UserProcessed'] });
  });

  it('when a Form template is filled, then values are form-encoded and URL placeholders percent-encoded', () => {
    const r = renderHookRequest(
      {
        url: 'https://x.example.com/in/{Data.Name}?s={LeadStatus}',
        method: 'PUT',
        format: 'Form',
        contentTemplate: 'name={Data.Name}&missing={ClosedDate}',
        standardTemplate: 'Standard',
      },
      message,
    );
    expect(r.url).toBe('https://x.example.com/in/%C3%86r%C3%B8%20%22Quote%22%20%5C%20%26%20%3D%20%3F?s=UserProcessed');
    expect(new URLSearchParams(r.body).get('name')).toBe('Ærø "Quote" \\ & = ?');
    expect(new URLSearchParams(r.body).get('missing')).toBe('');
    expect(r.contentType).toBe('application/x-www-form-urlencoded');
  });

  it('when no content template is given, then the standard envelope or the data alone is sent', () => {
    const shape = { url: 'https://x.example.com/', method: 'POST' as const, format: 'Json' as const, contentTemplate: null };
    expect(JSON.parse(renderHookRequest({ ...shape, standardTemplate: 'Standard' }, message).body)).toEqual({
      type: message.type,
      timestamp: message.timestamp,
      data: message.data,
    });
    expect(JSON.parse(renderHookRequest({ ...shape, standardTemplate: 'Data' }, message).body)).toEqual(message.data);
  });

  it('when templates name unknown placeholders, then they are reported; JSON braces are not placeholders', () => {
    expect(unknownPlaceholders('{"a":"{UniqueId}","b":"{uniqueid}","c":"{Data.Any field}","d":"{Nope}"}')).toEqual(['{Nope}']);
    expect(unknownPlaceholders('{"a":"{Lead_Id}","b":"{ UniqueId }","c":"{lead-id}","d":"{Data.}","e":"{}","f":"{a b}"}')).toEqual([
      '{Lead_Id}',
      '{ UniqueId }',
      '{lead-id}',
      '{Data.}',
    ]);
    expect(unknownPlaceholders('https://x.example.com/{UniqueId}/{Data.Customer no}?q={Closure}')).toEqual([]);
    expect(contentTemplateProblems('{"a": {UniqueId}}', 'Json')).toEqual([
      'with format Json the template must be JSON, with placeholders inside its strings',
    ]);
    expect(contentTemplateProblems('a={UniqueId}', 'Form')).toEqual([]);
    expect(urlTemplateProblems('http://x.example.com/', { allowHttp: false })).toEqual([
      expect.stringMatching(/^the scheme must be https .*HOOKS_ALLOW_HTTP=true/),
    ]);
    expect(urlTemplateProblems('https://x.example.com/{UniqueId}', { allowHttp: false })).toEqual([]);
  });
});

describe('hook addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fd00:ec2::254', 'metadata'],
    ['fc00::1', 'uniqueLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['224.0.0.1', 'multicast'],
  ])('when the address is %s, then it is refused as %s', (address, range) => {
    expect(classifyAddress(address)).toEqual({ allowed: false, range });
  });

  it('when an address is refused, then the message names its range in words, with the right article', () => {
    expect(refusedAddressMessage('fd00::1', 'fd00::1', 'uniqueLocal')).toMatch(
      /^fd00::1 is a unique local address, which hooks may not reach; /,
    );
    expect(refusedAddressMessage('::', '::', 'unspecified')).toMatch(/^:: is an unspecified address, /);
    expect(refusedAddressMessage('cgn.example', '100.64.0.1', 'carrierGradeNat')).toMatch(
      /^cgn\.example \(100\.64\.0\.1\) is a carrier-grade NAT address, .*HOOKS_ALLOWED_HOSTS=cgn\.example/,
    );
    expect(refusedAddressMessage('127.0.0.1', '127.0.0.1', 'loopback')).toMatch(/^127\.0\.0\.1 is a loopback address, /);
  });

  it('when the host is localhost or a name under it, then its address is loopback without DNS; other names have none', () => {
    expect(knownAddress('localhost')).toBe('127.0.0.1');
    expect(knownAddress('LocalHost.')).toBe('127.0.0.1');
    expect(knownAddress('hooks.localhost')).toBe('127.0.0.1');
    expect(knownAddress('[::1]')).toBe('::1');
    expect(knownAddress('notlocalhost.example')).toBeUndefined();
    expect(knownAddress('localhost.example')).toBeUndefined();
  });

  it('when the address is public, then it is allowed; allow-listed hosts match without case', () => {
    expect(classifyAddress('93.184.216.34')).toEqual({ allowed: true, range: 'unicast' });
    expect(classifyAddress('2606:2800:220:1:248:1893:25c8:1946').allowed).toBe(true);
    expect(isAllowListed('LocalHost', ['localhost'])).toBe(true);
    expect(isAllowListed('[::1]', ['::1'])).toBe(true);
  });
});

describe('hook retries', () => {
  it('when a delivery keeps failing, then delays double with equal jitter up to the cap, and it is given up within three days', () => {
    expect(retryDelayMs(1, DEFAULT_RETRY_POLICY, 0)).toBe(15_000);
    expect(retryDelayMs(1, DEFAULT_RETRY_POLICY, 1)).toBe(30_000);
    expect(retryDelayMs(3, DEFAULT_RETRY_POLICY, 0.5)).toBe(90_000);
    expect(retryDelayMs(30, DEFAULT_RETRY_POLICY, 1)).toBe(6 * 3600_000);
    for (const random of [0, 0.5, 1]) {
      const first = new Date('2026-05-06T08:00:00Z');
      let now = first;
      let failures = 0;
      for (;;) {
        failures += 1;
        const next = nextAttemptTime(DEFAULT_RETRY_POLICY, { failures, firstAttemptTime: first, now }, random);
        if (next === undefined) break;
        now = next;
      }
      const span = now.getTime() - first.getTime();
      expect(span).toBeLessThanOrEqual(3 * 86_400_000);
      expect(span).toBeGreaterThan(3 * 86_400_000 - 6 * 3600_000);
      expect(failures).toBeGreaterThan(10);
      expect(failures).toBeLessThan(40);
    }
  });

  it('when a hook has failed for five days, then it is to be disabled', () => {
    const since = new Date('2026-05-01T00:00:00Z');
    expect(shouldDisableHook(DEFAULT_RETRY_POLICY, since, new Date('2026-05-05T23:59:59Z'))).toBe(false);
    expect(shouldDisableHook(DEFAULT_RETRY_POLICY, since, new Date('2026-05-06T00:00:00Z'))).toBe(true);
  });
});

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, Browser, BrowserContext, Page } from 'playwright-core';
import { uniq } from '../harness/testApp';
import { useTestWorld } from '../harness/useTestWorld';

/**
 * The HTML pages as a person sees them: a real headless Chromium (Debian's `chromium`,
 * installed by the test command when missing) opens the running app with Basic credentials,
 * reads the rows, and proves that markup in data stays text. A screenshot goes to test-output/.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUTPUT_DIR = path.resolve(__dirname, '../../test-output');
const EVIL_TITLE = '<script>alert(1)</script>';

describe('HTML pages in a browser', () => {
  const { t, w } = useTestWorld();
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let calendar: string;
  const dialogs: string[] = [];

  beforeAll(async () => {
    calendar = `cal-browser-${w.id}`;
    await t.load(
      { type: 'calendar', code: calendar, name: 'Browser', project: w.projects.b2b },
      {
        type: 'calendarEvent',
        uniqueId: uniq('ev-'),
        calendarCode: calendar,
        leadUniqueId: 'lead-1',
        title: EVIL_TITLE,
        notes: '<img src=x onerror=alert(2)>',
        start: '2026-05-04T09:00:00',
        end: '2026-05-04T09:30:00',
        source: 'crm',
        externalId: 'x1',
      },
      {
        type: 'calendarEvent',
        uniqueId: uniq('ev-'),
        calendarCode: calendar,
        leadUniqueId: 'lead-2',
        title: 'Call Ærø back',
        notes: 'Ring after lunch',
        start: '2026-05-05T14:00:00',
        end: '2026-05-05T14:15:00',
        source: 'crm',
        externalId: 'x2',
      },
    );
    base = (await t.listen()).url;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-quic',
      ],
    });
    // A fresh context is a new, empty profile; the credentials answer the Basic challenge.
    context = await browser.newContext({
      httpCredentials: { username: w.accounts.b2b.username, password: w.accounts.b2b.password },
      viewport: { width: 1280, height: 720 },
    });
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
  });

  async function open(url: string): Promise<Page> {
    const page = await context.newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const response = await page.goto(base + url);
    expect({ url, status: response?.status() }).toEqual({ url, status: 200 });
    return page;
  }

  describe('GET /api/calendars/{CalendarCode}/events', () => {
    it('when the calendar page is opened with credentials, then each event is a visible row and markup in a title shows as text', async () => {
      const page = await open(`/api/calendars/${calendar}/events?FromDate=2026-05-01&ToDate=2026-06-01`);
      await expect(page.title()).resolves.toContain(`Calendar ${calendar}: events`);
      const rows = page.locator('table.list > tbody > tr');
      await expect(rows.count()).resolves.toBe(2);
      const titles = await page.locator('td[data-field="title"]').allInnerTexts();
      expect(titles).toEqual([EVIL_TITLE, 'Call Ærø back']);
      await expect(page.getByText(EVIL_TITLE, { exact: true }).isVisible()).resolves.toBe(true);
      await expect(page.locator('td[data-field="start"] time').first().getAttribute('datetime')).resolves.toBe(
        '2026-05-04T09:00:00.000+02:00',
      );
      await expect(page.locator('td[data-field="start"]').first().innerText()).resolves.toBe('Mon 4 May 2026, 09:00:00 (+02:00)');
      // No element came from the data: no script, no image, and no dialog fired.
      await expect(page.locator('script, img').count()).resolves.toBe(0);
      await page.waitForTimeout(300);
      expect(dialogs).toEqual([]);
      mkdirSync(OUTPUT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(OUTPUT_DIR, 'calendar-events.png'), fullPage: true });
      await page.close();
    });

    it('when a Retail calendar is opened by the B2B account, then the browser gets a 404', async () => {
      await t.load({ type: 'calendar', code: `cal-browser-ret-${w.id}`, project: w.projects.retail });
      const page = await context.newPage();
      const response = await page.goto(`${base}/api/calendars/cal-browser-ret-${w.id}/events?FromDate=2026-05-01&ToDate=2026-06-01`);
      expect(response?.status()).toBe(404);
      await page.close();
    });
  });

  describe('account and organisation pages', () => {
    it('when /api/myaccount is opened, then the username and project rights are shown as rows', async () => {
      const page = await open('/api/myaccount');
      await expect(page.locator('th[scope=row]', { hasText: 'username' }).locator('xpath=following-sibling::td').innerText()).resolves.toBe(
        w.accounts.b2b.username,
      );
      await expect(page.getByText(`B2B-${w.id}*`).isVisible()).resolves.toBe(true);
      await page.close();
    });

    it('when /api/myaccount/request/limits is opened, then every counted service is a row', async () => {
      const page = await open('/api/myaccount/request/limits');
      const services = await page.locator('td[data-field="service"]').allInnerTexts();
      expect(services).toEqual(expect.arrayContaining(['calendars.events.list', 'calendars.events.bycalendar', 'myaccount']));
      await page.close();
    });

    it('when /api/users is opened, then the world’s agent is a row', async () => {
      const page = await open('/api/users');
      const orgCodes = await page.locator('td[data-field="orgCode"]').allInnerTexts();
      expect(orgCodes).toContain(w.users.agent);
      await page.close();
    });
  });

  describe('GET /api/docs/reference', () => {
    it('when the plain reference is opened, then the calendar operations are listed and link to their sections', async () => {
      const page = await open('/api/docs/reference');
      await page
        .getByRole('link', { name: /\/calendars\/\{CalendarCode\}\/events/ })
        .first()
        .click();
      await expect(page.locator('#op-listCalendarEventsOfCalendar').isVisible()).resolves.toBe(true);
      await expect(page.locator('#op-listCalendarEventsOfCalendar td', { hasText: 'FromDate' }).first().isVisible()).resolves.toBe(true);
      await page.close();
    });
  });

  describe('GET /api/docs', () => {
    it('when the interactive reference is opened without a network, then it renders the operations with their examples and samples, and a try-it request with the credentials typed in gets the account', async () => {
      // No stored credentials: the page has to send the ones typed into it. Anything not served
      // by this server (a CDN, fonts, telemetry) is refused and recorded.
      const anonymous = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      const outside: string[] = [];
      await anonymous.route(/^(?!http:\/\/127\.0\.0\.1[:/]).*/, (route) => {
        outside.push(route.request().url());
        return route.abort();
      });
      // The page loads a 4 MB script: on a loaded machine its load event can take more than the default 30 s.
      anonymous.setDefaultNavigationTimeout(120_000);
      const page = await anonymous.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      try {
        const response = await page.goto(`${base}/api/docs`);
        expect(response?.status()).toBe(200);
        // Operations of every tag are open, with their examples.
        await page
          .getByText('Events of every calendar in the account’s projects')
          .filter({ visible: true })
          .first()
          .waitFor({ timeout: 90_000 });
        // The reference renders the sections near the view: go there through the sidebar.
        await page.getByText('Calls of a user or an org unit in a time window').filter({ visible: true }).first().click();
        const calls = page.locator('section[id$="/GET/calls"]').first();
        await calls.waitFor();
        await expect(calls.getByText('Maximum number of items returned; not for paging.').first().isVisible()).resolves.toBe(true);
        await expect(calls.getByText('Example').first().isVisible()).resolves.toBe(true);
        // The request samples: curl by default, the TypeScript client one choice away.
        await expect(calls.getByText(/curl /).first().isVisible()).resolves.toBe(true);
        await calls.getByRole('button', { name: 'Shell Curl' }).click();
        await page.getByText('TypeScript client').filter({ visible: true }).first().click();
        await expect(
          calls
            .getByText(/createLcmClient/)
            .first()
            .isVisible(),
        ).resolves.toBe(true);

        // Try it: credentials into the page's authentication form, then send GET /myaccount.
        // The username field is an editable element (it offers the document's variables), the
        // password an input; both sit in the reference's authentication form.
        const authForm = page
          .locator('form')
          .filter({ has: page.getByText('Username') })
          .first();
        const username = authForm.locator('[contenteditable="true"]').first();
        await username.click();
        await page.keyboard.type(w.accounts.b2b.username);
        await authForm.getByRole('textbox', { name: 'Password' }).fill(w.accounts.b2b.password);
        await page.getByText('The calling account').filter({ visible: true }).first().click();
        const account = page.locator('section[id$="/GET/myaccount"]').first();
        await account.waitFor();
        await account.locator('.show-api-client-button').first().click();
        const client = page.getByRole('dialog').first();
        const answer = page.waitForResponse((r) => r.url() === `${base}/api/myaccount` && r.request().method() === 'GET');
        await client.getByRole('button', { name: /^Send/ }).first().click();
        expect((await answer).status()).toBe(200);
        await expect(client.getByText(w.accounts.b2b.username).first().isVisible()).resolves.toBe(true);
        mkdirSync(OUTPUT_DIR, { recursive: true });
        await page.screenshot({ path: path.join(OUTPUT_DIR, 'docs-try-it.png') });
        expect(outside).toEqual([]);
        expect(errors).toEqual([]);
      } finally {
        await anonymous.close();
      }
      // A 4 MB script parsed and a large document rendered: minutes on a loaded 2-core machine.
    }, 240_000);
  });
});

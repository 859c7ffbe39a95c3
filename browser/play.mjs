// qoelab: play one DASH stream with dash.js in headless Chromium and print its events as JSON lines.
// node play.mjs '<json config>'   (config: mpd, duration_s, settings, sample_ms, chromium, wait_go, tmpdir;
// or dump_settings: print dash.js's default settings and stop)
// Run by `qoelab dashjs` (python/qoelab/dashjs.py) and, with wait_go, by `qoelab run --real` for a client of
// player "dashjs" (crates/qoelab-net/src/real.rs): the page loads, prints {"ev":"ready"} and starts playing
// when a line arrives on stdin (the client's start time); its events' times count from then.
// Not meant to be called by hand.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const cfg = JSON.parse(process.argv[2]);
const origin = new URL(cfg.mpd).origin;
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const page_html = readFileSync(join(here, 'player.html'));
const dash_js = readFileSync(join(here, 'node_modules', 'dashjs', 'dist', 'modern', 'umd', 'dash.all.min.js'));

// Temporary files (playwright's profile and artifacts folders, Chromium's own) go into the caller's
// folder, which the caller removes however this process ends (a killed Chromium leaves them behind).
// Chromium also writes under $HOME (~/.config/chromium/Crash Reports, ~/.cache/dconf): there too.
if (cfg.tmpdir) {
  process.env.TMPDIR = cfg.tmpdir;
  process.env.HOME = cfg.tmpdir;
  process.env.XDG_CONFIG_HOME = join(cfg.tmpdir, 'config');
  process.env.XDG_CACHE_HOME = join(cfg.tmpdir, 'cache');
}
const browser = await chromium.launch({
  executablePath: cfg.chromium,
  args: ['--no-sandbox', '--autoplay-policy=no-user-gesture-required', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-default-apps',
         '--disable-domain-reliability', '--disable-breakpad',
         // the page is fulfilled by this script (no IP address: Chromium counts it as a public origin), so its
         // same-origin requests to the server's private address would be blocked as local-network access
         '--disable-features=MediaRouter,OptimizationHints,LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,' +
           'PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults'],
});
let done = false;
const stop = async (code) => {
  if (done) return;
  done = true;
  try { await browser.close(); } catch (e) { /* already gone */ }
  process.exit(code);
};
process.on('SIGINT', () => stop(130));
process.on('SIGTERM', () => stop(143));
try {
  const page = await browser.newPage();
  // only the page and dash.js are served from here; everything else goes to the real server
  await page.route(`${origin}/__qoelab/**`, (route) => {
    const u = new URL(route.request().url());
    if (u.pathname === '/__qoelab/player.html') return route.fulfill({ body: page_html, contentType: 'text/html' });
    if (u.pathname === '/__qoelab/dash.all.min.js') return route.fulfill({ body: dash_js, contentType: 'text/javascript' });
    if (u.pathname === '/__qoelab/settings.html') {
      return route.fulfill({ body: '<script src="/__qoelab/dash.all.min.js"></script>', contentType: 'text/html' });
    }
    return route.fulfill({ status: 404, body: '' });
  });
  if (cfg.dump_settings) {   // dash.js's default settings (python -m qoelab.dashjs --write-settings keeps them)
    await page.goto(`${origin}/__qoelab/settings.html`);
    out({ ev: 'settings', version: await page.evaluate(() => dashjs.Version || dashjs.MediaPlayer().create().getVersion()),
          settings: await page.evaluate(() => dashjs.MediaPlayer().create().getSettings()) });
    await stop(0);
  }
  let ended = false, ladder = false;
  await page.exposeFunction('qoelabEvent', (ev) => {
    out(ev);
    if (ev.ev === 'ladder') ladder = true;
    if (ev.ev === 'ended' || (ev.ev === 'error' && !ladder)) ended = true;   // no manifest: nothing to wait for
  });
  page.on('pageerror', (e) => out({ ev: 'error', error: String(e).slice(0, 300) }));
  page.on('requestfailed', (r) => out({ ev: 'request_failed', url: r.url(), failure: (r.failure() || {}).errorText }));
  const conf = { mpd: cfg.mpd, settings: cfg.settings, sample_ms: cfg.sample_ms, wait_go: !!cfg.wait_go };
  await page.goto(`${origin}/__qoelab/player.html#${encodeURIComponent(JSON.stringify(conf))}`);
  if (cfg.wait_go) {
    await page.waitForFunction(() => typeof window.qoelabStart === 'function');
    out({ ev: 'ready' });
    await new Promise((resolve) => {
      process.stdin.once('data', resolve);
      process.stdin.once('end', () => stop(0));       // told nothing: the run ended before this client's start
    });
    await page.evaluate(() => window.qoelabStart());
  }
  const deadline = Date.now() + cfg.duration_s * 1000;
  while (Date.now() < deadline && !ended) await new Promise((r) => setTimeout(r, 100));
  out({ ev: 'done', ended });
  await stop(0);
} catch (e) {
  out({ ev: 'fatal', error: String(e).split('\n')[0] });
  await stop(1);
}

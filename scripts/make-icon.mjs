// Renders media/rft.svg (the activity-bar glyph, drawn in currentColor) as the extension's 128x128
// PNG icon (media/icon.png; the Welcome page's walkthrough tile and the Extensions view show it;
// vsce takes no SVG icon). Run once when the glyph changes: node scripts/make-icon.mjs
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const svg = readFileSync(new URL('../media/rft.svg', import.meta.url), 'utf8')
  .replace('stroke="currentColor"', 'stroke="#ffffff"')
  .replace('width="24" height="24"', 'width="96" height="96"');
const browser = await chromium.launch({
  executablePath: process.env.RFT_E2E_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const page = await browser.newPage({ viewport: { width: 128, height: 128 } });
await page.setContent(
  `<body style="margin:0"><div style="width:128px;height:128px;border-radius:24px;background:#0e639c;display:flex;align-items:center;justify-content:center">${svg}</div></body>`,
);
await page.screenshot({ path: new URL('../media/icon.png', import.meta.url).pathname, omitBackground: true });
await browser.close();

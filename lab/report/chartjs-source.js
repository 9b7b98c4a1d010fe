// Chart.js for report.html: its UMD build found in node_modules and read once,
// made safe to inline (the page loads nothing from the network).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { inlineScript } from './html-escape.js';

/** @type {string | null} */
let chartJsCache = null;

/**
 * Path of Chart.js's UMD build in node_modules.
 *
 * @returns {string}
 */
export function chartJsPath() {
  // chart.js exports no ./package.json; its CommonJS entry sits in dist/ beside the UMD build.
  const entry = createRequire(import.meta.url).resolve('chart.js');
  return path.join(path.dirname(entry), 'chart.umd.js');
}

/**
 * Chart.js's UMD build, read once, made safe to sit inside a <script> element.
 *
 * @returns {string}
 */
export function chartJsSource() {
  if (chartJsCache === null) chartJsCache = inlineScript(readFileSync(chartJsPath(), 'utf8'));
  return chartJsCache;
}

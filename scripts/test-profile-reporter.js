// The Playwright reporter of scripts/test-profile.js: charges each browser test
// the CPU the whole machine spent while it ran (/proc/stat) and its wall time,
// one JSON line per test into the file CARLAB_TEST_PROFILE_LINES (E2E_LINES_VAR) names. Meant
// for one worker: tests side by side would be charged each other's CPU.
import { appendFileSync } from 'node:fs';
import path from 'node:path';

import { E2E_LINES_VAR, machineCpuS } from './test-profile.js';

/** @typedef {import('@playwright/test/reporter').Reporter} Reporter */

/** @implements {Reporter} */
export default class TestProfileReporter {
  constructor() {
    /** When each running test began: machine CPU-s and wall ms. @type {Map<string, { cpuS: number, at: number }>} */
    this.began = new Map();
    this.file = process.env[E2E_LINES_VAR] ?? 'test-profile-e2e.ndjson';
  }

  /** @param {import('@playwright/test/reporter').TestCase} test */
  onTestBegin(test) {
    this.began.set(test.id, { cpuS: machineCpuS(), at: performance.now() });
  }

  /** @param {import('@playwright/test/reporter').TestCase} test @param {import('@playwright/test/reporter').TestResult} result */
  onTestEnd(test, result) {
    const began = this.began.get(test.id);
    if (!began) return;
    this.began.delete(test.id);
    const project = test.parent.project()?.name ?? '';
    const cost = {
      name: `[${project}] ${path.basename(test.location.file)}:${test.location.line} ${test.title}`,
      cpuS: machineCpuS() - began.cpuS,
      wallS: (performance.now() - began.at) / 1000,
      status: result.status,
    };
    appendFileSync(this.file, `${JSON.stringify(cost)}\n`);
  }

  printsToStdio() {
    return false;
  }
}

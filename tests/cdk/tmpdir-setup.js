/**
 * jest globalSetup: every CDK App synthesized without an outdir writes its assembly (templates and
 * Lambda asset copies, about 2 MB) to a fresh `cdk.outXXXXXX` under os.tmpdir() and never removes it:
 * about 80 of them, 160 MB, per run of this suite. The workers start after this, with TMPDIR
 * pointing at one private directory that tmpdir-teardown.js removes.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');

module.exports = async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'benchfleet-jest-'));
  process.env.BENCHFLEET_JEST_TMPDIR = dir;
  process.env.TMPDIR = dir;
};

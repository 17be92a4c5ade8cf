/** jest globalTeardown: remove the private TMPDIR of tmpdir-setup.js, with every cdk.out in it. */
const fs = require('fs');

module.exports = async () => {
  const dir = process.env.BENCHFLEET_JEST_TMPDIR;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
};

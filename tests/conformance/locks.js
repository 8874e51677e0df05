// Node programs taking zklockfs locks the way Node programmers do: async
// opens of a lock directory's entries, run on libuv's thread pool
// (UV_THREADPOOL_SIZE threads, set by the caller), and a lock tree walked
// with fs.readdirSync and removed with fs.rmSync({recursive: true}).  Node
// has no flock(2) in its standard library, so lock files are not used.
// Run by tests/integration/test_languages.py; see tests/conformance/README.md.
//
//   node locks.js MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
//   node locks.js walk ROOT
//
// Each of TASKS async tasks (named PREFIX "t" N) does CYCLES critical
// sections on the lock directory PATH, opening PATH/ID with O_CREAT.  A
// section appends "enter ID NS" to LOG once the open resolved, awaits a
// 1 ms timer HOLD_MS times (other tasks' opens go to the pool meanwhile,
// to the thread that ran this one's), appends "leave ID NS", and only then
// gives the lock back; the task awaits one more 1 ms timer before its next
// cycle.  NS is process.hrtime.bigint() (CLOCK_MONOTONIC); each line is one
// fs.writeSync to LOG opened 'a' (O_APPEND).  Exit 0 once every task did
// its cycles; a failure is printed on stderr, exit status 1.
//
//   promises  fs.promises.open(entry, 'w') / await fileHandle.close()
//   callback  util.promisify(fs.open)(entry, 'w') / fs.closeSync(fd)
//
// A waiting open occupies a pool thread until the lock is granted.  With
// one pool thread, the holder must give the lock back without the pool
// (fs.closeSync), or its close would queue behind the very open it must
// end: "callback" does that; "promises" (its close goes through the pool)
// is run with fewer tasks than pool threads.
//
// walk ROOT: "walk REL" for each directory found under ROOT by recursing
// with fs.readdirSync(dir, {withFileTypes: true}), "list NAME" for each
// name of fs.readdirSync(ROOT), then fs.rmSync(ROOT, {recursive: true})
// and "removed".
'use strict';
const fs = require('fs');
const path = require('path');
const util = require('util');

function walk(root) {
  const rec = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) {
        const p = path.join(dir, e.name);
        console.log('walk ' + path.relative(root, p));
        rec(p);
      }
    }
  };
  rec(root);
  for (const name of fs.readdirSync(root)) console.log('list ' + name);
  fs.rmSync(root, { recursive: true });
  console.log('removed');
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === 'walk') return walk(argv[1]);
  const [mode, log, tasksS, cyclesS, holdS, prefix, dir] = argv;
  const tasks = +tasksS, cycles = +cyclesS, holdMs = +holdS;
  const logfd = fs.openSync(log, 'a');
  const logline = (what, id) =>
    fs.writeSync(logfd, `${what} ${id} ${process.hrtime.bigint()}\n`);
  const sleep = util.promisify(setTimeout);
  const openCb = util.promisify(fs.open);

  async function section(id) {
    logline('enter', id);
    for (let i = 0; i < holdMs; i++) await sleep(1);
    logline('leave', id);
  }

  async function task(id) {
    const entry = path.join(dir, id);
    for (let c = 0; c < cycles; c++) {
      if (mode === 'promises') {
        const fh = await fs.promises.open(entry, 'w');
        await section(id);
        await fh.close();
      } else if (mode === 'callback') {
        const fd = await openCb(entry, 'w');
        await section(id);
        fs.closeSync(fd);
      } else {
        throw new Error('unknown mode ' + mode);
      }
      await sleep(1);
    }
  }

  const ids = Array.from({ length: tasks }, (_, i) => `${prefix}t${i}`);
  const results = await Promise.allSettled(ids.map(task));
  const failed = results
    .map((r, i) => (r.status === 'rejected' ? `error ${ids[i]}: ${r.reason}` : null))
    .filter((x) => x);
  if (failed.length) {
    process.stderr.write(failed.join('\n') + '\n');
    process.exit(1);
  }
}

main().catch((e) => {
  process.stderr.write(`error: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});

// A reporter in jest's own process, where CI asks (PULUMI_TIGERCLOUD_WORKER_RECORD): how long that
// process's event loop stalled at most between the last suite's result and the run's end. jest
// ends its workers in that window and kills one it has not seen exit within 500 ms ("A worker
// process has failed to exit gracefully"); a stall that long makes it miss an exit that came in
// time, which the workers' own records (test/support/environment.js) then show.
const fs = require("fs");
const { monitorEventLoopDelay } = require("perf_hooks");

class EndReporter {
  constructor() {
    this.record = process.env.PULUMI_TIGERCLOUD_WORKER_RECORD;
    this.delay = monitorEventLoopDelay({ resolution: 10 });
  }
  onRunStart() {
    if (this.record) this.delay.enable();
  }
  onTestFileResult() {
    // From this result on: the last one's reset is the window before the run's end.
    this.delay.reset();
    this.lastResultAt = Date.now();
  }
  onRunComplete() {
    if (!this.record) return;
    this.delay.disable();
    fs.mkdirSync(this.record, { recursive: true });
    fs.writeFileSync(
      `${this.record}/jest-${process.pid}.end`,
      JSON.stringify({ lastResultAt: this.lastResultAt, endedAt: Date.now(), longestStallMs: Math.round(this.delay.max / 1e6) }),
    );
  }
}

module.exports = EndReporter;

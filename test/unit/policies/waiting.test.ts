// The polling schedule: a status change is noticed within 1 s + 5% of the time waited, and the
// number of reads grows slowly with the wait.
import { WAIT_DEFAULTS, nextPollDelay } from "../../../provider/policies/waiting";

/** Poll times from 0 until the first at or after `until`. */
function pollsUntil(until: number): number[] {
  const times = [0];
  while ((times.at(-1) as number) < until) times.push((times.at(-1) as number) + nextPollDelay(times.at(-1) as number));
  return times;
}

test.each([5_000, 60_000, 600_000, 1_800_000])("READY at any moment up to %i ms is seen within 1 s + 5%% of it", (t) => {
  const times = pollsUntil(t);
  for (let i = 1; i < times.length; i++) {
    const gap = (times[i] as number) - (times[i - 1] as number);
    // READY just after poll i-1 is seen at poll i: the lag is at most the gap.
    expect(gap).toBeLessThanOrEqual(1000 + 0.05 * (times[i - 1] as number) + 1);
  }
});

test("a 10-minute wait reads about 90 times; the pause never exceeds 15 s", () => {
  expect(pollsUntil(600_000).length).toBeLessThan(100);
  expect(nextPollDelay(10 * 3_600_000)).toBe(WAIT_DEFAULTS.maxPollMs);
  expect(nextPollDelay(0)).toBe(WAIT_DEFAULTS.firstPollMs);
});

// Concurrency lanes: at most `limit` jobs of one account run at once; the others wait, first in
// first out, never refused (fal's queue). With an infinite limit a job starts when its dispatch
// delay is over (Replicate's and BFL's starts).
//
// Scheduling is computed, not simulated: when a job is appended its start is the later of its
// ready moment, the previous job's ready moment (FIFO: nobody overtakes) and the moment a slot
// frees (a heap of the end times of the jobs holding slots). A job that could only start after
// its start deadline does not take a slot and ends `timed_out` at the deadline. Because starts
// are monotone in submit order, a timed-out job never sees a later job start before its deadline.
//
// A cancel frees a slot (or a queue place) and a limit change changes the number of slots; both
// reschedule the lane from that instant: jobs already started keep their times, the queued ones
// are planned again in order. Replaying the same events at the same instants gives the same
// schedule, which is how a restarted emulator re-derives it from its journal.
import { MinHeap } from './heap.js';
import type { Job } from './job.js';

export class Lane {
  /** Jobs not known to have ended at the last reschedule, in submit order (running ones first after one). */
  private jobs: Job[] = [];
  /** Before this index no job can be queued any more (for queue positions). */
  private head = 0;
  /** End times of the jobs holding slots, once every planned job has been placed. */
  private busy = new MinHeap();
  /** Ready moment of the last planned job: FIFO means no later job is considered before it. */
  private lastReady = -Infinity;

  constructor(
    readonly account: string,
    public limit: number,
  ) {}

  append(job: Job): void {
    job.laneIndex = this.jobs.length;
    this.jobs.push(job);
    this.place(job);
  }

  /**
   * Plans every job that has not started by `now` again (after a cancel or a limit change) and
   * returns the jobs whose start or end moved.
   */
  reschedule(now: number): Job[] {
    const running: Job[] = [];
    const waiting: Job[] = [];
    for (const job of this.jobs) {
      if (job.hasEndedAt(now)) continue;
      (job.startsAt <= now ? running : waiting).push(job);
    }
    this.busy = new MinHeap();
    if (this.limit !== Infinity) for (const job of running) this.busy.push(job.endsAt);
    this.lastReady = now;
    this.jobs = [...running, ...waiting];
    this.jobs.forEach((job, i) => (job.laneIndex = i));
    this.head = running.length;
    const moved: Job[] = [];
    for (const job of waiting) {
      const before = [job.startsAt, job.endsAt, job.outcome] as const;
      this.place(job);
      if (before[0] !== job.startsAt || before[1] !== job.endsAt || before[2] !== job.outcome)
        moved.push(job);
    }
    return moved;
  }

  /** Jobs ahead of `job` in this lane that are still waiting at `now` (0 = next to start). */
  positionOf(job: Job, now: number): number {
    const jobs = this.jobs;
    while (this.head < jobs.length && !jobs[this.head]!.isQueuedAt(now)) this.head++;
    let ahead = 0;
    for (let i = this.head; i < job.laneIndex; i++) if (jobs[i]!.isQueuedAt(now)) ahead++;
    return ahead;
  }

  private place(job: Job): void {
    const { record } = job;
    const ready = Math.max(record.readyAt, this.lastReady);
    this.lastReady = ready;
    if (job.cancelledAt !== undefined) return;
    const freed: number[] = [];
    let start = ready;
    if (this.limit !== Infinity) {
      // After a limit was lowered more jobs may hold slots than the limit: wait for enough to end.
      while (this.busy.size >= this.limit) freed.push(this.busy.pop()!);
      const freeAt = freed[freed.length - 1];
      if (freeAt !== undefined) start = Math.max(start, freeAt);
    }
    const deadline = record.startDeadline;
    if (deadline !== null && start > deadline) {
      for (const end of freed) this.busy.push(end);
      job.startsAt = Infinity;
      job.endsAt = deadline;
      job.outcome = 'timed_out';
      return;
    }
    job.startsAt = start;
    job.outcome = record.planned;
    job.endsAt = record.planned === 'stuck' ? Infinity : start + record.runMs;
    if (this.limit !== Infinity) this.busy.push(job.endsAt);
  }
}

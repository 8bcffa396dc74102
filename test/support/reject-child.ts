import { pino } from 'pino';
import { runUntilStopped } from '../../src/process/shutdown.js';

/**
 * A process that runs until a promise is rejected with no handler (a bug) and says when its stop ran:
 * `reject-child.js`, its log lines on stdout.
 */
// Written synchronously: the test reads the order of what the process did from the order of its lines,
// and an asynchronous destination's exit flush can overtake a write still in flight (seen under load).
const log = pino({ name: 'reject-child' }, pino.destination({ dest: 1, sync: true }));
await runUntilStopped(
  () => {
    setTimeout(() => {
      void Promise.reject(new Error('the disk is gone'));
    }, 20);
    // Holds the process as a server would.
    const held = setInterval(() => undefined, 1000);
    return Promise.resolve({
      stop: () => {
        clearInterval(held);
        log.info('stopped');
        return Promise.resolve();
      },
    });
  },
  { log },
);

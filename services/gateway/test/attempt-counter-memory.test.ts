import { MemoryAttemptCounter } from '../src/adapters/memory/memory-attempt-counter';
import { describeAttemptCounterContract } from './attempt-counter.contract';

describeAttemptCounterContract('memory', async (now) => ({ counter: new MemoryAttemptCounter(now), close: async () => undefined }));

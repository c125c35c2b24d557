import { ConfigError } from '@cards/platform';
import { inProcessCallsOf } from '../src/main';

describe('GRPC_IN_PROCESS', () => {
  it('turns the in-process calls off with false, 0 or no in any case (only the exact "false" did: FALSE left them on unsaid)', () => {
    for (const off of ['false', 'FALSE', 'False', '0', 'no', ' false ']) expect(inProcessCallsOf({ GRPC_IN_PROCESS: off })).toBe(false);
    for (const on of [undefined, '', 'true', 'TRUE', '1', 'yes']) expect(inProcessCallsOf({ GRPC_IN_PROCESS: on })).toBe(true);
  });

  it('stops the start at any other value, naming it', () => {
    expect(() => inProcessCallsOf({ GRPC_IN_PROCESS: 'off' })).toThrow(ConfigError);
    expect(() => inProcessCallsOf({ GRPC_IN_PROCESS: 'off' })).toThrow(/GRPC_IN_PROCESS: expected true or false/);
  });
});

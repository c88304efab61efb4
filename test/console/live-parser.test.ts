import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sseParser } from '../../console/src/live.ts';

/** The frames `sseParser` makes of the text, fed in the chunks given. */
function framesOf(...chunks: string[]) {
  const frames: { id?: string; event: string; data: string }[] = [];
  const feed = sseParser((f) => frames.push(f));
  for (const chunk of chunks) feed(chunk);
  return frames;
}

describe("the console's SSE parser (console/src/live.ts)", () => {
  it('reads frames as the specification says: fields, comments, data lines joined, any line ending', () => {
    assert.deepEqual(framesOf(': stream open\n\nid: 7\nevent: order.created\ndata: {"id":1}\n\n'), [{ id: '7', event: 'order.created', data: '{"id":1}' }]);
    assert.deepEqual(framesOf('data:a\r\ndata: b\r\n\r\n'), [{ id: undefined, event: 'message', data: 'a\nb' }]);
    // a CR at the end of what came may be half a CRLF: the frame ends when more arrives
    assert.deepEqual(framesOf('id: 8\revent: x\rdata: y\r\r'), []);
    assert.deepEqual(framesOf('id: 8\revent: x\rdata: y\r\r', ': more\r\n'), [{ id: '8', event: 'x', data: 'y' }]);
    // a frame without data is no event; a comment alone neither
    assert.deepEqual(framesOf('event: x\n\n: heartbeat\n\n'), []);
  });

  it('waits for the rest of a frame, and of a CRLF, split across chunks', () => {
    assert.deepEqual(framesOf('id: 9\nevent: order.status_changed\nda', 'ta: {"id":2', '}\r', '\n\r', '\n'), [
      { id: '9', event: 'order.status_changed', data: '{"id":2}' },
    ]);
    assert.deepEqual(framesOf('data: one\n', '\n', 'data: two\n\n'), [
      { id: undefined, event: 'message', data: 'one' },
      { id: undefined, event: 'message', data: 'two' },
    ]);
  });
});

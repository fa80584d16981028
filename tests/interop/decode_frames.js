'use strict';
/**
 * Reads a JSON list of hex frames on stdin and prints, for each, what this bot's decoder makes of it:
 * "ok:KIND" or the reject reason. For comparing decoders frame by frame.
 */
const { decode, ProtocolError } = require('./protocol');

const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const out = JSON.parse(Buffer.concat(chunks).toString('utf8')).map((hex) => {
    try {
      return `ok:${decode(Buffer.from(hex, 'hex')).kind}`;
    } catch (err) {
      if (err instanceof ProtocolError) return err.reason;
      return `crash:${err.message}`;
    }
  });
  process.stdout.write(JSON.stringify(out));
});

// An ESME written with node-smpp, which nobody on this project wrote: the interoperability
// test of the tenants' SMPP server (cmd/tuma/app/smppinterop_test.go) binds it to Tuma.
// Flags and the stdout/stdin protocol are in README.md.
'use strict';
const smpp = require('smpp');
const defs = require('smpp/lib/defs');

// Keep short_message as the octets received: the test decodes them itself.
defs.filters.message.decode = function (value) { return value; };

const args = { port: '2775', 'system-id': '', password: '' };
for (let i = 2; i < process.argv.length; i++) args[process.argv[i].replace(/^--/, '')] = process.argv[++i];

function emit(ev) { process.stdout.write(JSON.stringify(ev) + '\n'); }

const session = smpp.connect({ url: 'smpp://127.0.0.1:' + args.port, auto_enquire_link_period: 10000 });
session.on('error', function (e) { emit({ event: 'error', error: String(e) }); });
session.on('close', function () { emit({ event: 'close' }); });
session.bind_transceiver({ system_id: args['system-id'], password: args.password }, function (pdu) {
  emit({ event: 'bind', status: pdu.command_status });
});
session.on('deliver_sm', function (pdu) {
  const sm = Buffer.isBuffer(pdu.short_message) ? pdu.short_message : Buffer.alloc(0);
  if (pdu.esm_class & 0x04) {
    emit({ event: 'receipt', receipted_message_id: pdu.receipted_message_id || null, message_state: pdu.message_state,
      short_message: sm.toString('latin1') });
  } else {
    emit({ event: 'mo', source_addr: pdu.source_addr, destination_addr: pdu.destination_addr, esm_class: pdu.esm_class,
      data_coding: pdu.data_coding, short_message_hex: sm.toString('hex') });
  }
  session.send(pdu.response());
});

// Stdin: one submit per line, {"tag", "to", "data_coding", "hex", "esm_class"}; "quit".
const readline = require('readline');
readline.createInterface({ input: process.stdin }).on('line', function (line) {
  const cmd = line.trim();
  if (cmd === 'quit') {
    session.unbind(function () { session.close(); process.exit(0); });
    return;
  }
  const m = JSON.parse(cmd);
  session.submit_sm({ destination_addr: m.to, dest_addr_ton: 1, dest_addr_npi: 1, data_coding: m.data_coding,
    esm_class: m.esm_class || 0, registered_delivery: 1, short_message: Buffer.from(m.hex, 'hex') }, function (pdu) {
    emit({ event: 'submit_resp', tag: m.tag, status: pdu.command_status, message_id: pdu.message_id });
  });
});

// An SMSC written with node-smpp (npm "smpp"), which nobody on this project wrote: the
// interoperability test of carriers/smpp binds to it. Flags and the stdout/stdin protocol are
// in README.md.
'use strict';
const smpp = require('smpp');
const defs = require('smpp/lib/defs');

// Keep short_message as the octets received (UDH included): the test checks them exactly.
defs.filters.message.decode = function (value) { return value; };

const args = { port: '0', 'system-id': 'tuma', password: 'secret', tps: '0', 'receipt-delay-ms': '20',
  'receipt-mode': 'both', 'id-format': 'hex', 'receipt-id': 'same', 'fail-dest': '', 'reject-dest': '',
  'receipt-before-resp': false, 'no-stdin': false, 'counts-only': false };
for (let i = 2; i < process.argv.length; i++) {
  const k = process.argv[i].replace(/^--/, '');
  if (k === 'receipt-before-resp' || k === 'no-stdin' || k === 'counts-only') { args[k] = true; continue; }
  args[k] = process.argv[++i];
}
const tps = Number(args.tps);
const delay = Number(args['receipt-delay-ms']);

// --counts-only: per-message events are left out (a load test's SMSC should not spend its
// time writing them); a stats line every 20 ms carries the counts instead.
const quiet = new Set(['submit', 'receipt', 'throttled']);
function emit(ev) {
  if (args['counts-only'] && quiet.has(ev.event)) return;
  process.stdout.write(JSON.stringify(ev) + '\n');
}
if (args['counts-only']) {
  let last = '';
  setInterval(function () {
    const line = JSON.stringify(Object.assign({ event: 'stats', sessions: sessions.size }, stats));
    if (line !== last) { process.stdout.write(line + '\n'); last = line; }
  }, 20);
}

let counter = 0x10000000 + Math.floor(Math.random() * 0x100000);
let second = 0, inSecond = 0;
const states = new Map(); // message id → message_state
const sessions = new Set();
const stats = { submits: 0, throttled: 0, receipts: 0 };

function pad(n) { return String(n).padStart(2, '0'); }
function stamp(d) {
  return pad(d.getUTCFullYear() % 100) + pad(d.getUTCMonth() + 1) + pad(d.getUTCDate()) + pad(d.getUTCHours()) + pad(d.getUTCMinutes());
}
function receiptID(id) {
  if (args['receipt-id'] === 'dec') return String(parseInt(id, 16)).padStart(10, '0');
  if (args['receipt-id'] === 'hex-upper') return id.toUpperCase();
  if (args['receipt-id'] === 'hex') return parseInt(id, 10).toString(16).toUpperCase();
  return id;
}
function bound(session) { return session.tumaBound === true; }

function sendReceipt(session, r) {
  let target = session;
  if (target.tumaClosed) {
    target = [...sessions].find((s) => bound(s) && !s.tumaClosed);
    if (!target) { emit({ event: 'receipt_dropped', message_id: r.id }); return; }
  }
  const delivered = !(args['fail-dest'] && r.dest.startsWith(args['fail-dest']));
  const stat = delivered ? 'DELIVRD' : 'UNDELIV';
  const state = delivered ? 2 : 5;
  states.set(r.id, state);
  const now = new Date();
  const opts = { source_addr_ton: 1, source_addr_npi: 1, source_addr: r.dest, dest_addr_ton: r.srcTon,
    dest_addr_npi: r.srcNpi, destination_addr: r.src, esm_class: 0x04, data_coding: 0 };
  if (args['receipt-mode'] !== 'tlv') {
    opts.short_message = Buffer.from('id:' + receiptID(r.id) + ' sub:001 dlvrd:' + (delivered ? '001' : '000') +
      ' submit date:' + stamp(r.at) + ' done date:' + stamp(now) + ' stat:' + stat + ' err:' + (delivered ? '000' : '001') +
      ' text:' + r.text.slice(0, 20));
  } else {
    opts.short_message = Buffer.alloc(0);
  }
  if (args['receipt-mode'] !== 'text') {
    opts.receipted_message_id = r.id;
    opts.message_state = state;
  }
  target.deliver_sm(opts);
  stats.receipts++;
  emit({ event: 'receipt', message_id: r.id, stat: stat });
}

const server = smpp.createServer({}, function (session) {
  sessions.add(session);
  session.on('error', function () { /* a dropped peer; 'close' follows */ });
  session.on('close', function () { session.tumaClosed = true; sessions.delete(session); emit({ event: 'close' }); });
  const onBind = function (pdu) {
    if (pdu.system_id !== args['system-id']) {
      session.send(pdu.response({ command_status: smpp.ESME_RINVSYSID }));
      return;
    }
    if (pdu.password !== args.password) {
      session.send(pdu.response({ command_status: smpp.ESME_RINVPASWD }));
      return;
    }
    session.tumaBound = true;
    session.send(pdu.response({ system_id: 'nodesmsc' }));
    emit({ event: 'bind', system_id: pdu.system_id, command: pdu.command });
  };
  session.on('bind_transceiver', onBind);
  session.on('bind_transmitter', onBind);
  session.on('bind_receiver', onBind);
  session.on('enquire_link', function (pdu) { session.send(pdu.response()); });
  session.on('unbind', function (pdu) { session.send(pdu.response()); emit({ event: 'unbind' }); session.close(); });
  session.on('query_sm', function (pdu) {
    emit({ event: 'query', message_id: pdu.message_id });
    if (!states.has(pdu.message_id)) {
      session.send(pdu.response({ command_status: smpp.ESME_RQUERYFAIL }));
      return;
    }
    session.send(pdu.response({ message_id: pdu.message_id, final_date: '', message_state: states.get(pdu.message_id), error_code: 0 }));
  });
  session.on('submit_sm', function (pdu) {
    if (!bound(session)) { session.send(pdu.response({ command_status: smpp.ESME_RINVBNDSTS })); return; }
    const now = Math.floor(Date.now() / 1000);
    if (now !== second) { second = now; inSecond = 0; }
    if (tps > 0 && ++inSecond > tps) {
      stats.throttled++;
      emit({ event: 'throttled' });
      session.send(pdu.response({ command_status: smpp.ESME_RTHROTTLED }));
      return;
    }
    if (args['reject-dest'] && pdu.destination_addr.startsWith(args['reject-dest'])) {
      emit({ event: 'rejected', destination_addr: pdu.destination_addr });
      session.send(pdu.response({ command_status: smpp.ESME_RINVDSTADR }));
      return;
    }
    counter++;
    const id = args['id-format'] === 'dec' ? String(counter) : counter.toString(16);
    stats.submits++;
    states.set(id, 1);
    const sm = Buffer.isBuffer(pdu.short_message) ? pdu.short_message : Buffer.alloc(0);
    const num = (v) => (v === undefined ? null : v);
    emit({ event: 'submit', seq: pdu.sequence_number, message_id: id, source_addr: pdu.source_addr,
      source_addr_ton: pdu.source_addr_ton, source_addr_npi: pdu.source_addr_npi, destination_addr: pdu.destination_addr,
      dest_addr_ton: pdu.dest_addr_ton, dest_addr_npi: pdu.dest_addr_npi, esm_class: pdu.esm_class,
      data_coding: pdu.data_coding, registered_delivery: pdu.registered_delivery, short_message_hex: sm.toString('hex'),
      sar_msg_ref_num: num(pdu.sar_msg_ref_num), sar_total_segments: num(pdu.sar_total_segments),
      sar_segment_seqnum: num(pdu.sar_segment_seqnum) });
    const udhLen = (pdu.esm_class & 0x40) && sm.length ? sm[0] + 1 : 0;
    const body = sm.slice(udhLen);
    const text = pdu.data_coding === 8 ? body.swap16 && Buffer.from(body).swap16().toString('utf16le') : body.toString('latin1');
    const r = { id, src: pdu.source_addr, srcTon: pdu.source_addr_ton, srcNpi: pdu.source_addr_npi,
      dest: pdu.destination_addr, text: text.replace(/[^\x20-\x7e]/g, '?'), at: new Date() };
    const wantReceipt = (pdu.registered_delivery & 0x03) !== 0;
    if (wantReceipt && args['receipt-before-resp']) {
      sendReceipt(session, r);
      session.send(pdu.response({ message_id: id }));
      return;
    }
    session.send(pdu.response({ message_id: id }));
    if (wantReceipt) setTimeout(function () { sendReceipt(session, r); }, delay);
  });
});

server.listen(Number(args.port), '127.0.0.1', function () {
  emit({ event: 'listening', port: server.address().port });
});

const readline = require('readline');
// --no-stdin: run until SIGTERM (started in the background by a script).
const rl = readline.createInterface({ input: args['no-stdin'] ? new (require('stream').PassThrough)() : process.stdin });
rl.on('line', function (line) {
  const cmd = line.trim();
  if (cmd === 'drop') {
    const n = sessions.size;
    for (const s of sessions) { s.socket.destroy(); }
    emit({ event: 'dropped', sessions: n });
  } else if (cmd === 'stats') {
    emit(Object.assign({ event: 'stats', sessions: sessions.size }, stats));
  } else if (cmd === 'quit') {
    process.exit(0);
  } else if (cmd.startsWith('mo ')) {
    sendMO(JSON.parse(cmd.slice(3)));
  }
});

// sendMO delivers a subscriber's message to the first bound session as deliver_sm (esm_class
// type 0): UCS-2 split every 134 octets (so a surrogate pair may straddle two parts, as some
// SMSCs do) tied by an 8-bit UDH reference ('udh'), a 16-bit one ('udh16') or the SAR TLVs
// ('sar'); each part's deliver_sm_resp status is an 'mo_resp' event.
let moRef = 0;
function sendMO(m) {
  const target = [...sessions].find((s) => bound(s) && !s.tumaClosed);
  if (!target) { emit({ event: 'mo_dropped' }); return; }
  const body = Buffer.from(m.text, 'utf16le').swap16();
  const chunks = [];
  for (let i = 0; i < body.length; i += 134) chunks.push(body.slice(i, i + 134));
  const ref = ++moRef;
  chunks.forEach(function (chunk, i) {
    const opts = { source_addr_ton: 1, source_addr_npi: 1, source_addr: m.from, dest_addr_ton: 3, dest_addr_npi: 0,
      destination_addr: m.to, esm_class: 0, data_coding: 8, short_message: chunk };
    if (chunks.length > 1 && m.concat === 'sar') {
      opts.sar_msg_ref_num = ref; opts.sar_total_segments = chunks.length; opts.sar_segment_seqnum = i + 1;
    } else if (chunks.length > 1) {
      const udh = m.concat === 'udh16' ? Buffer.from([6, 8, 4, ref >> 8, ref & 0xff, chunks.length, i + 1])
        : Buffer.from([5, 0, 3, ref & 0xff, chunks.length, i + 1]);
      opts.esm_class = 0x40;
      opts.short_message = Buffer.concat([udh, chunk]);
    }
    target.deliver_sm(opts, function (resp) {
      emit({ event: 'mo_resp', from: m.from, part: i + 1, of: chunks.length, status: resp.command_status });
    });
  });
}
if (!args['no-stdin']) rl.on('close', function () { process.exit(0); });
process.on('SIGTERM', function () { process.exit(0); });

// The page's glue: loads the wasm program (built by `browser_duel`), puts its API on
// `window.duel` (see docs/browser.md), sets `window.duelReady`, and wires the buttons.
// The game itself (connection, simulation, drawing, keyboard) is Rust: page.rs.
import init, * as wasm from './browser_duel.js';

const $ = (id) => document.getElementById(id);

function fail(message) {
  const e = $('error');
  e.textContent = message;
  e.hidden = false;
  $('loading').hidden = true;
  window.duelError = message;
}

async function main() {
  try {
    await init();
  } catch (e) {
    fail(`cannot load the game's program: ${e}`);
    return;
  }
  // performance.now() counts from the start of the navigation: the load time.
  const loadMs = performance.now();
  window.duel = {
    status: () => wasm.status(),
    loadReplay: (bytes) => wasm.loadReplay(bytes),
    seek: (frame) => wasm.seek(frame),
    replayStatus: () => wasm.replayStatus(),
    setPlaying: (on) => wasm.setPlaying(on),
    inspect: (player) => wasm.inspect(player),
    playBotLocally: () => wasm.playBotLocally(),
    replayBytes: () => wasm.replayBytes(),
  };
  try {
    wasm.start(loadMs);
  } catch (e) {
    fail(`cannot start the game: ${e}`);
    return;
  }
  $('loading').hidden = true;
  window.duelReady = true;
  wire();
}

function wire() {
  $('local-bot').addEventListener('click', () => {
    try { window.duel.playBotLocally(); } catch (e) { fail(String(e)); }
  });
  $('save-replay').addEventListener('click', () => {
    let bytes;
    try { bytes = window.duel.replayBytes(); } catch (e) { $('status').textContent = String(e); return; }
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    a.download = 'duel.replay';
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });
  const inspector = $('inspector');
  const inspectOn = $('inspect-on');
  inspectOn.addEventListener('change', () => { inspector.hidden = !inspectOn.checked; refreshInspector(); });
  $('inspect-player').addEventListener('change', refreshInspector);

  // The replay viewer.
  const scrub = $('replay-scrub');
  const play = $('replay-play');
  let playing = false;
  const controls = [play, $('replay-back'), $('replay-fwd'), scrub];
  $('replay-file').addEventListener('change', async (ev) => {
    const file = ev.target.files[0];
    if (!file) return;
    const bytes = new Uint8Array(await file.arrayBuffer());
    const r = window.duel.loadReplay(bytes);
    if (r.error) { $('replay-frame').textContent = r.error; return; }
    refreshInspector();
  });
  const seek = (f) => {
    try { window.duel.seek(f); } catch (e) { $('replay-frame').textContent = String(e); }
    refreshInspector();
  };
  scrub.addEventListener('input', () => seek(Number(scrub.value)));
  $('replay-back').addEventListener('click', () => seek(Math.max(0, Number(scrub.value) - 1)));
  $('replay-fwd').addEventListener('click', () => seek(Math.min(Number(scrub.max), Number(scrub.value) + 1)));
  play.addEventListener('click', () => {
    playing = !playing;
    window.duel.setPlaying(playing);
  });

  setInterval(() => {
    let s;
    try { s = window.duel.status(); } catch (e) { return; }
    const parts = [`${s.state}`];
    if (s.mode !== 'replay') {
      parts.push(s.player === null ? '' : `player ${s.player}`, `frame ${s.frame}`);
      if (s.ping_ms !== null) parts.push(`ping ${s.ping_ms} ms`);
      parts.push(`${s.rollbacks} rollbacks`);
      if (s.final_checksum) parts.push(`final checksum ${s.final_checksum}`);
    }
    parts.push(`${s.frame_time_recent_ms.toFixed(2)} ms/frame`);
    $('status').textContent = parts.filter(Boolean).join(' · ');
    if (s.mode === 'replay') {
      const r = window.duel.replayStatus();
      if (r.loaded) {
        // Loaded from the file input or through the API: the controls follow the replay.
        if (Number(scrub.max) !== Math.max(0, r.frames - 1) || scrub.disabled) {
          scrub.max = Math.max(0, r.frames - 1);
          controls.forEach((c) => { c.disabled = false; });
        }
        playing = r.playing;
        play.textContent = playing ? '❚❚ pause' : '▶ play';
        if (r.frame !== null) scrub.value = r.frame;
        $('replay-frame').textContent = `after frame ${r.frame ?? '–'} of ${r.frames} · checksum ${r.checksum}`;
        if (playing) refreshInspector();
      }
    } else if (!inspector.hidden && s.state === 'playing') {
      refreshInspector();
    }
  }, 250);
}

function refreshInspector() {
  const inspector = $('inspector');
  if (inspector.hidden) return;
  try {
    inspector.textContent = window.duel.inspect(Number($('inspect-player').value));
  } catch (e) {
    inspector.textContent = String(e);
  }
}

main();

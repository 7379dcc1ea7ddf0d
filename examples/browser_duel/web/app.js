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
    takeSounds: () => wasm.takeSounds(),
    setMuted: (on) => setMuted(on),
    setShowBoxes: (on) => wasm.setShowBoxes(on),
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
  wireSound();
}

// ---------------------------------------------------------------------------------------------
// Sound: the cues' sounds, synthesised with Web Audio (no asset files). The game decides what
// sounds when (the crate's sound policy: a cue presented late starts at the offset of the
// frames it missed, a cancelled one fades out, a persistent one loops until removed, each
// once); this plays those commands and logs them in `window.duelSoundLog`. Muted (the M key,
// the checkbox, or `?mute=1`) and hidden tabs keep the bookkeeping and make no sound.
// ---------------------------------------------------------------------------------------------

const FRAME_S = 1 / 60;
// Per cue: oscillator type, start and end pitch (Hz), length (s; 0 = a loop), volume.
const VOICES = {
  'Hit.Light': ['square', 880, 440, 0.10, 0.10],
  'Hit.Heavy': ['sawtooth', 220, 70, 0.25, 0.16],
  'Hit.Crit': ['square', 1320, 660, 0.18, 0.10],
  'Hit.Blocked': ['triangle', 1500, 1500, 0.08, 0.10],
  'Lifesteal': ['sine', 520, 780, 0.20, 0.08],
  'Fireball.Launch': ['sawtooth', 160, 420, 0.30, 0.08],
  'Fireball.Impact': ['sawtooth', 300, 60, 0.35, 0.16],
  'KO': ['triangle', 440, 55, 0.70, 0.18],
  'Poison': ['sine', 98, 98, 0, 0.04],
  'Stun': ['triangle', 660, 660, 0, 0.03],
  'Shield': ['sine', 330, 330, 0, 0.04],
  'Sprint': ['triangle', 140, 140, 0, 0.03],
};
const audio = { ctx: null, master: null, muted: false, voices: new Map() };
window.duelSoundLog = [];

function audioContext() {
  if (audio.ctx) return audio.ctx;
  const Ctx = window.AudioContext || window.webkitAudioContext;
  if (!Ctx) return null;
  try {
    audio.ctx = new Ctx();
    audio.master = audio.ctx.createGain();
    audio.master.gain.value = audio.muted ? 0 : 1;
    audio.master.connect(audio.ctx.destination);
  } catch (e) {
    audio.ctx = null;
  }
  return audio.ctx;
}

function setMuted(on) {
  audio.muted = !!on;
  const box = $('mute');
  if (box) box.checked = audio.muted;
  if (audio.master) audio.master.gain.value = audio.muted ? 0 : 1;
}

function startVoice(c) {
  const ctx = audioContext();
  const v = VOICES[c.sound] || ['sine', 440, 440, 0.1, 0.05];
  const [type, f0, f1, length, volume] = v;
  const offset = c.offset * FRAME_S;
  // A burst heard from `offset` on: what is left of it; a loop has no end.
  const left = length === 0 ? Infinity : length - offset;
  const entry = { offset_s: offset, left_s: left === Infinity ? null : Math.max(0, left) };
  if (!ctx || left <= 0) return entry;
  const t = ctx.currentTime;
  const osc = ctx.createOscillator();
  const gain = ctx.createGain();
  osc.type = type;
  if (length === 0) {
    osc.frequency.value = f0;
    gain.gain.setValueAtTime(volume, t);
  } else {
    // The envelope and the pitch sweep as they are `offset` seconds in.
    const at = offset / length;
    osc.frequency.setValueAtTime(f0 + (f1 - f0) * at, t);
    osc.frequency.linearRampToValueAtTime(f1, t + left);
    gain.gain.setValueAtTime(volume * (1 - at), t);
    gain.gain.linearRampToValueAtTime(0, t + left);
  }
  osc.connect(gain).connect(audio.master);
  osc.start(t);
  if (length !== 0) osc.stop(t + left + 0.02);
  audio.voices.set(c.id, { osc, gain });
  osc.onended = () => { if (audio.voices.get(c.id)?.osc === osc) audio.voices.delete(c.id); };
  return entry;
}

function endVoice(c, seconds) {
  const voice = audio.voices.get(c.id);
  audio.voices.delete(c.id);
  if (!voice || !audio.ctx) return { ended: false };
  const t = audio.ctx.currentTime;
  voice.gain.gain.cancelScheduledValues(t);
  voice.gain.gain.setValueAtTime(voice.gain.gain.value, t);
  voice.gain.gain.linearRampToValueAtTime(0, t + seconds);
  try { voice.osc.stop(t + seconds + 0.01); } catch (e) { /* already stopping */ }
  return { ended: true };
}

function pumpSounds() {
  if (!window.duel) return;
  let cmds;
  try { cmds = window.duel.takeSounds(); } catch (e) { return; }
  for (const c of cmds) {
    const ctx = audioContext();
    const audible = !!ctx && !audio.muted && !document.hidden && ctx.state === 'running';
    let extra = {};
    try {
      if (c.op === 'start') extra = startVoice(c);
      else if (c.op === 'fade') extra = endVoice(c, c.fade * FRAME_S);
      else if (c.op === 'stop') extra = endVoice(c, 0.01);
    } catch (e) {
      // The audio refused (a closed context): the command is still logged, with the reason.
      extra = { error: String(e) };
    }
    window.duelSoundLog.push({
      op: c.op, id: c.id, sound: c.sound, frame: c.frame, offset: c.offset, fade: c.fade,
      looped: c.looped, audible, ...extra,
    });
  }
  if (window.duelSoundLog.length > 20000) window.duelSoundLog.splice(0, 10000);
}

function wireSound() {
  const params = new URLSearchParams(location.search);
  setMuted(params.get('mute') === '1');
  const box = $('mute');
  if (box) box.addEventListener('change', () => setMuted(box.checked));
  // Browsers start audio only after a gesture: the first key or click resumes it.
  const resume = () => { const ctx = audioContext(); if (ctx && !document.hidden) ctx.resume(); };
  window.addEventListener('keydown', (ev) => {
    if (ev.code === 'KeyM') setMuted(!audio.muted);
    resume();
  });
  window.addEventListener('pointerdown', resume);
  // A hidden tab is silent (and slowed by the browser); its loops go on when it is back.
  document.addEventListener('visibilitychange', () => {
    const ctx = audio.ctx;
    if (!ctx) return;
    if (document.hidden) ctx.suspend(); else ctx.resume();
  });
  const frame = () => { pumpSounds(); requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
  // Animation frames stop in a hidden tab; the commands are still taken (and logged).
  setInterval(pumpSounds, 250);
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
  // Hit, hurt and push boxes: off in a match, on in the replay viewer, until the box is ticked.
  const boxesOn = $('boxes-on');
  boxesOn.checked = new URLSearchParams(location.search).get('view') === 'replay';
  boxesOn.addEventListener('change', () => window.duel.setShowBoxes(boxesOn.checked));
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
    const m = s.match;
    // A decided match is over whatever the session does: it waits for the rematch.
    const parts = [m && m.state === 'match_over' && s.state === 'playing' ? 'match over' : `${s.state}`];
    if (m) {
      const score = m.wins.join('–');
      if (m.state === 'match_over') {
        parts.push(m.winner === null ? `drawn ${score}` : `won by P${m.winner} ${score}`);
        parts.push(m.rematch_open ? 'J for a rematch' : '');
      } else if (m.round > m.best_of) {
        parts.push(`round ${m.round} (tie-break) · ${score}`);
      } else {
        parts.push(`round ${m.round} of best ${m.best_of} · ${score}`);
      }
    }
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

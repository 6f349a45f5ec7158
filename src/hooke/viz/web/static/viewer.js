// hooke viewer page: controls, a view (1D and 2D scenes on a canvas, 3D scenes in WebGL: see
// view3d.js) and Plotly plots, driven by the server over one WebSocket (messages: see
// hooke/viz/web/protocol.py and session.py). The simulation runs in the server; this page only
// draws what it is sent and sends the user's commands. Invalid input marks its field and is
// never sent: the simulation keeps its last valid value. window.hookeViewer exposes the page's
// state for inspection (fps: simulation frames received per second, the readout;
// animationFps: the browser's repaints; view3d: the 3D view, rendersPerSecond: its draws).
import { createView3d } from "./view3d.js";

(() => {
  const $ = (id) => document.getElementById(id);
  const MAX_SAMPLES = 1000;          // samples kept per plot (seed 000: the last 1000)
  const PLOT_INTERVAL_MS = 250;      // plots redraw at most this often while running
  const PICK_RADIUS = 14;            // canvas pixels around a particle that grab it
  const TRAIL_FRAMES = 8;            // recent frames a click may find a moving particle in (~0.2 s)
  // Parameters in words with their units (the builders' names are short: nx, n_seg, tilt …)
  const LABELS = {
    x0: "Initial length x0 [m]", v0: "Initial velocity v0 [m/s]", stiffness: "Stiffness k [N/m]",
    mass: "Mass m [kg]", damping: "Damping [N·s/m]", gravity: "Gravity [m/s²]",
    spacing: "Spacing [m]", length: "Length [m]", density: "Density [kg/m²]", side: "Side [m]",
    n: "Particles per side (or links)", nx: "Particles along x", ny: "Particles along y",
    nz: "Particles along z", n_seg: "Segments per side", count: "Number of blocks",
    size: "Side [m]", height: "Height [m]", tilt: "Tilt [degrees]", bend: "Bend [degrees]",
    bending: "Bending stiffness [N/m]", friction: "Friction coefficient μ",
    gap: "Gap between blocks [m]", shift: "Shift per block [m]", offset: "Offset [m]",
    masses: "Masses [kg]", scale: "Mesh scale", fix_tolerance: "Fixed layer height [m]",
    pin_lowest: "Fix the lowest layer", pin_bottom: "Fix the bottom layer",
    surface: "Contact surface", speed: "Press speed [m/s]", duration: "Press duration [s]",
    top_velocity: "Top mass velocity [m/s]", support_amplitude: "Support amplitude [m]",
    support_omega: "Support frequency ω [rad/s]", spring_energy: "Spring energy",
    mesh: "Mesh file",
  };

  const canvas = $("view");
  const ctx = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height;

  const viewer = {
    socket: null,
    scene: null,        // the last "scene" message
    starts: 0,          // how many runs were (re)started: "scene" messages received
    frame: null,        // the last "frame" message
    paused: false,
    active: null,       // the server's integrator and dt
    // last valid values of every field: what Restart sends
    valid: { dt: null, steps_per_frame: null, parameters: {} },
    rules: {},          // parameter name -> {integer, exclusive_minimum, minimum}
    series: null,       // plot buffers
    plotsDirty: false,
    lastPlot: 0,
    fps: 0,             // simulation frames received per second (what the readout shows)
    framesReceived: 0,
    animationFps: 0,    // the browser's animation frames per second
    view3d: null,       // the WebGL view of 3D scenes (created on the first one)
    rendersPerSecond: 0,
    view2d: null,       // 2D pan/zoom
    pointer: null,      // current mouse interaction
    trail: [],          // the last frames' positions (picking a moving particle)
    particleRadius: 4,
  };
  window.hookeViewer = viewer;

  // ---- connection ------------------------------------------------------------------------
  function connect() {
    const scene = new URLSearchParams(location.search).get("scene");
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws" +
      (scene ? "?scene=" + encodeURIComponent(scene) : "");
    const socket = new WebSocket(url);
    viewer.socket = socket;
    socket.onmessage = (event) => receive(JSON.parse(event.data));
    socket.onclose = () => setStatus("disconnected from the server: reload the page to reconnect");
  }

  function send(command) {
    if (viewer.socket && viewer.socket.readyState === WebSocket.OPEN) {
      viewer.socket.send(JSON.stringify(command));
    }
  }
  viewer.send = send;

  function receive(message) {
    switch (message.type) {
      case "hello": return onHello(message);
      case "scene": return onScene(message);
      case "settings": return onSettings(message);
      case "frame": return onFrame(message);
      case "error": return onError(message);
      case "status": return onStatus(message);
    }
  }

  // Until the first scene comes the status line says what the page waits for: the first page
  // after an install waits while the server compiles hooke's kernels (116 s on a busy 2-core
  // machine, with "connecting…" shown all along).
  function onHello(message) {
    fillSelect($("scene"), message.scenes.map((name) => ({ value: name, text: name })));
    fillSelect($("integrator"), message.integrators.map(
      (item) => ({ value: item.name, text: item.name, title: item.summary })));
    if (!viewer.scene) {
      setStatus("connected; starting this page's simulation (the first time after an install, " +
                "the server compiles hooke's kernels: a minute or more)…");
    }
  }

  function onScene(message) {
    viewer.scene = message;
    viewer.starts += 1;
    $("scene").value = message.scene;
    $("description").textContent = message.description;
    viewer.rules = {};
    viewer.valid.parameters = {};
    for (const input of document.querySelectorAll("#controls input")) markValid(input, true);
    buildParameterFields(message.parameters);
    applySettings(message);
    // An error that came before the first scene (an unknown ?scene=, answered with the default
    // scene) stays shown; later scenes clear the last message.
    if (viewer.starts > 1 || !viewer.openingError) $("message").textContent = "";
    viewer.series = newSeries();
    viewer.trail = [];
    show3d(message.dim === 3);
    if (message.dim === 3) {
      view3d().load(message);
    } else {
      viewer.particleRadius = particleRadius(message);
      fitView2d(message);
      viewer.view2dMoved = false;
    }
    $("observed-row").hidden = !message.observed;
    $("observed-rms").textContent = "–";
    $("observed-note").textContent = message.observed
      ? `Observed motion (${message.observed.name}, t = ${message.observed.t[0]}–${message.observed.t[1]} s) drawn in purple.`
      : (message.observed_note || "");
    $("plot-position").classList.toggle("hidden", !message.has_analytic);
    $("plot-joints").classList.toggle("hidden", message.joints.length === 0);
    onFrame(message.frame);
    drawPlots();
  }

  // The server's settings after a "set": remembered and shown in the status line; the fields
  // keep what the user chose (a later choice may already be on its way to the server).
  function onSettings(message) {
    viewer.active = { integrator: message.integrator, dt: message.dt };
    viewer.valid.dt = message.dt;
    viewer.valid.steps_per_frame = message.steps_per_frame;
    setStatus(`${viewer.scene.scene} · ${message.integrator} · dt = ${message.dt}`);
  }

  function applySettings(message) {
    $("integrator").value = message.integrator;
    $("dt").value = String(message.dt);
    $("steps-per-frame").value = String(message.steps_per_frame);
    onSettings(message);
  }

  function onFrame(frame) {
    viewer.frame = frame;
    viewer.framesReceived += 1;
    setPaused(frame.paused);
    const time = $("time");
    time.textContent = frame.t.toFixed(3);
    time.dataset.t = String(frame.t);
    $("steps").textContent = String(frame.steps);
    $("step-ms").textContent = frame.step_ms == null ? "–" : frame.step_ms.toFixed(3);
    const series = viewer.series;
    if (frame.position) {
      push(series.position.t, frame.position.t);
      push(series.position.numerical, frame.position.numerical);
      push(series.position.analytic, frame.position.analytic);
    }
    if (frame.energy) {
      push(series.energy.t, [frame.energy.t]);
      for (const key of ["kinetic", "potential", "total"]) push(series.energy[key], [frame.energy[key]]);
    }
    if (frame.joint_error != null && frame.energy) {
      push(series.joints.t, [frame.energy.t]);
      push(series.joints.error, [frame.joint_error]);
    }
    if (frame.observed) {
      $("observed-rms").textContent = frame.observed.rms == null ? "–" : frame.observed.rms.toPrecision(3);
    }
    if (frame.planes) viewer.scene.planes = frame.planes;
    if (viewer.scene.dim === 3) viewer.view3d.update(frame);
    else keepInView2d(frame.x);
    viewer.trail.push(frame.x);  // where the particles were lately: a moving one is grabbed there too
    if (viewer.trail.length > TRAIL_FRAMES) viewer.trail.shift();
    viewer.plotsDirty = true;
    if (frame.paused) drawPlots();   // show the final values at once when stopped
  }

  function onError(message) {
    $("message").textContent = message.message;
    if (!viewer.scene) viewer.openingError = true;
    const field = message.field || "";
    if (field === "integrator") $("integrator").value = viewer.active.integrator;   // refused
    const input = field === "dt" ? $("dt")
      : field.startsWith("parameters.") ? $("param-" + field.slice("parameters.".length)) : null;
    if (input) markValid(input, false);
  }

  // A scene being prepared (its build, the first compilation of its integrator): shown where
  // errors are, until its scene message (or an error) replaces it.
  function onStatus(message) { $("message").textContent = message.message; }

  function setStatus(text) { $("status").textContent = text; }

  function setPaused(paused) {
    viewer.paused = paused;
    $("pause").textContent = paused ? "Resume" : "Pause";
  }

  // ---- controls and validation -----------------------------------------------------------
  function fillSelect(select, options) {
    select.replaceChildren(...options.map((item) => {
      const option = document.createElement("option");
      option.value = item.value;
      option.textContent = item.text;
      if (item.title) option.title = item.title;
      return option;
    }));
  }

  function buildParameterFields(fields) {
    const box = $("parameters");
    box.replaceChildren(box.querySelector("legend"));
    box.hidden = fields.length === 0;
    for (const field of fields) {
      const label = document.createElement("label");
      label.htmlFor = "param-" + field.name;
      label.textContent = LABELS[field.name] || field.name;
      const input = document.createElement("input");
      input.id = "param-" + field.name;
      input.type = "text";
      input.inputMode = field.integer ? "numeric" : "decimal";
      input.autocomplete = "off";
      input.value = String(field.value);
      input.dataset.parameter = field.name;
      viewer.rules[field.name] = field;
      viewer.valid.parameters[field.name] = field.value;
      input.addEventListener("input", () => readField(input, field));
      // Enter restarts, leaving a field does not: moving on to edit the next parameter must not
      // start a run (whose "scene" reply rebuilds these fields) without it
      input.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && readField(input, field) !== null) restart();
      });
      box.append(label, input);
    }
  }

  // The number in `input` if it satisfies `rule` (integer, exclusive_minimum, minimum,
  // maximum), else null; the field is marked accordingly and a valid value is remembered.
  function readField(input, rule) {
    const text = input.value.trim();
    const value = text === "" ? NaN : Number(text);
    let ok = Number.isFinite(value);
    if (ok && rule.integer) ok = Number.isInteger(value);
    if (ok && rule.exclusive_minimum !== undefined) ok = value > rule.exclusive_minimum;
    if (ok && rule.minimum !== undefined) ok = value >= rule.minimum;
    if (ok && rule.maximum !== undefined) ok = value <= rule.maximum;
    markValid(input, ok);
    if (!ok) return null;
    if (input.dataset.parameter) viewer.valid.parameters[input.dataset.parameter] = value;
    return value;
  }

  function markValid(input, ok) {
    input.classList.toggle("invalid", !ok);
    input.setAttribute("aria-invalid", ok ? "false" : "true");
  }

  const DT_RULE = { exclusive_minimum: 0 };
  const STEPS_RULE = { integer: true, minimum: 1, maximum: 10000 };

  function restart() {
    send({ type: "restart", integrator: $("integrator").value, dt: viewer.valid.dt,
           parameters: viewer.valid.parameters });
  }

  $("scene").addEventListener("change", () => send({ type: "load", scene: $("scene").value }));
  $("integrator").addEventListener("change",
    () => send({ type: "set", integrator: $("integrator").value }));
  $("dt").addEventListener("input", () => readField($("dt"), DT_RULE));
  $("dt").addEventListener("change", () => {
    const dt = readField($("dt"), DT_RULE);
    if (dt !== null) send({ type: "set", dt });
  });
  $("steps-per-frame").addEventListener("input", () => readField($("steps-per-frame"), STEPS_RULE));
  $("steps-per-frame").addEventListener("change", () => {
    const steps = readField($("steps-per-frame"), STEPS_RULE);
    if (steps !== null) send({ type: "set", steps_per_frame: steps });
  });
  $("restart").addEventListener("click", () => {
    const dt = readField($("dt"), DT_RULE);
    if (dt !== null) viewer.valid.dt = dt;
    for (const input of $("parameters").querySelectorAll("input")) {
      readField(input, viewer.rules[input.dataset.parameter]);
    }
    restart();
  });
  $("pause").addEventListener("click", () => {
    setPaused(!viewer.paused);
    send({ type: "pause", paused: viewer.paused });
  });
  $("step").addEventListener("click", () => send({ type: "step" }));

  // ---- plots -----------------------------------------------------------------------------
  function newSeries() {
    return {
      position: { t: [], numerical: [], analytic: [] },
      energy: { t: [], kinetic: [], potential: [], total: [] },
      joints: { t: [], error: [] },
    };
  }

  function copySeries(series) {
    const copy = {};
    for (const [name, group] of Object.entries(series)) {
      copy[name] = Object.fromEntries(Object.entries(group).map(([key, values]) => [key, values.slice()]));
    }
    return copy;
  }

  function push(array, values) {
    for (const value of values) array.push(value);
    if (array.length > MAX_SAMPLES) array.splice(0, array.length - MAX_SAMPLES);
  }

  function layout(title, yTitle) {
    return {
      title: { text: title, font: { size: 14 }, x: 0.02, xanchor: "left" }, uirevision: "keep",
      margin: { l: 60, r: 10, t: 40, b: 40 },
      legend: { orientation: "h", x: 1, xanchor: "right", y: 1.0, yanchor: "bottom" },
      xaxis: { title: { text: "t [s]" } }, yaxis: { title: { text: yTitle }, autorange: true },
    };
  }

  const PLOT_CONFIG = { displayModeBar: false, responsive: true };

  // Plotly.react redraws only data arrays it has not seen: it is given copies of the buffers.
  function drawPlots() {
    if (!viewer.scene || !viewer.series) return;
    viewer.plotsDirty = false;
    viewer.lastPlot = performance.now();
    const s = copySeries(viewer.series);
    if (viewer.scene.has_analytic) {
      const [particle, coordinate] = viewer.scene.tracked;
      Plotly.react("plot-position", [
        { x: s.position.t, y: s.position.numerical, name: "numerical", type: "scatter", mode: "lines" },
        { x: s.position.t, y: s.position.analytic, name: "analytic", type: "scatter", mode: "lines",
          line: { dash: "dash" } },
      ], layout(`Position of particle ${particle} (coordinate ${coordinate})`, "x [m]"), PLOT_CONFIG);
    }
    Plotly.react("plot-energy", ["kinetic", "potential", "total"].map((key) => (
      { x: s.energy.t, y: s.energy[key], name: key, type: "scatter", mode: "lines" })),
      layout("Energy", viewer.scene.energy_label), PLOT_CONFIG);
    if (viewer.scene.joints.length) {
      Plotly.react("plot-joints", [{ x: s.joints.t, y: s.joints.error, name: "max |length error|",
        type: "scatter", mode: "lines" }], layout("Joint length error", "[m]"), PLOT_CONFIG);
    }
  }

  // ---- geometry helpers ------------------------------------------------------------------
  const sub = (a, b) => a.map((v, i) => v - b[i]);
  const norm = (a) => Math.hypot(...a);

  function bounds(points) {
    const lo = points[0].slice(), hi = points[0].slice();
    for (const p of points) for (let k = 0; k < p.length; k++) {
      lo[k] = Math.min(lo[k], p[k]);
      hi[k] = Math.max(hi[k], p[k]);
    }
    return { lo, hi };
  }

  // A radius for the particles: a fraction of the median spring length (in world units).
  function particleRadius(scene) {
    const x = scene.frame.x;
    const lengths = scene.springs.slice(0, 2000).map(([i, j]) => norm(sub(x[j], x[i])))
      .filter((l) => l > 0).sort((a, b) => a - b);
    const { lo, hi } = bounds(x);
    const size = norm(sub(hi, lo)) || 1;
    return lengths.length ? lengths[lengths.length >> 1] * 0.15 : size * 0.02;
  }

  // ---- 2D view (1D scenes on the x axis) -------------------------------------------------
  function fitView2d(scene) {
    const points = scene.frame.x.map((p) => (p.length === 1 ? [p[0], 0] : p));
    if (scene.dim === 1) points.push(...points.map(([x]) => [-x, 0]));   // oscillates about 0
    for (const plane of scene.planes) points.push(plane.point.length === 1 ? [plane.point[0], 0] : plane.point);
    const { lo, hi } = bounds(points);
    const width = Math.max(hi[0] - lo[0], 1e-3), height = Math.max(hi[1] - lo[1], 1e-3);
    viewer.view2d = {
      cx: (lo[0] + hi[0]) / 2, cy: (lo[1] + hi[1]) / 2,
      scale: 0.6 * Math.min(W / width, H / height),
    };
  }

  // The 2D view follows the body: while the user has not panned or zoomed, a particle that
  // leaves the inner 90 % of the canvas widens the view to what is shown plus the body (it never
  // narrows, so a swinging body does not make the view pump).
  function keepInView2d(x) {
    if (viewer.view2dMoved || !viewer.view2d) return;
    const points = x.map((p) => (p.length === 1 ? [p[0], 0] : p));
    const outside = points.some((p) => {
      const [sx, sy] = toScreen2d(p);
      return sx < 0.05 * W || sx > 0.95 * W || sy < 0.05 * H || sy > 0.95 * H;
    });
    if (!outside) return;
    points.push(toWorld2d(0.05 * W, 0.05 * H).concat([0]).slice(0, 2),
                toWorld2d(0.95 * W, 0.95 * H).concat([0]).slice(0, 2));
    const { lo, hi } = bounds(points);
    const width = Math.max(hi[0] - lo[0], 1e-3), height = Math.max(hi[1] - lo[1], 1e-3);
    viewer.view2d = { cx: (lo[0] + hi[0]) / 2, cy: viewer.scene.dim === 1 ? 0 : (lo[1] + hi[1]) / 2,
                      scale: 0.8 * Math.min(W / width, H / height) };
  }

  function toScreen2d(p) {
    const v = viewer.view2d;
    return [W / 2 + (p[0] - v.cx) * v.scale, H / 2 - ((p.length > 1 ? p[1] : 0) - v.cy) * v.scale];
  }

  function toWorld2d(sx, sy) {
    const v = viewer.view2d;
    const x = v.cx + (sx - W / 2) / v.scale, y = v.cy - (sy - H / 2) / v.scale;
    return viewer.scene.dim === 1 ? [x] : [x, y];
  }

  function draw2d(scene, x) {
    const px = x.map(toScreen2d);
    const v = viewer.view2d;
    // axes: 1 m in x (red) and y (green) from the origin, as in seed 000
    const o = toScreen2d([0, 0]);
    line(o, [o[0] + v.scale, o[1]], "#e33", 1);
    if (scene.dim > 1) line(o, [o[0], o[1] - v.scale], "#2b2", 1);
    for (const plane of scene.planes) drawPlane2d(plane);
    ctx.beginPath();
    for (const [i, j] of scene.springs) {
      if (scene.dim === 1) zigzag(px[i], px[j]); else { ctx.moveTo(...px[i]); ctx.lineTo(...px[j]); }
    }
    ctx.strokeStyle = scene.springs.length > 500 ? "rgba(70,70,70,0.55)" : "#555";
    ctx.lineWidth = 1;
    ctx.stroke();
    for (const [i, j] of scene.joints) line(px[i], px[j], "#e08a00", 3);
    const r = Math.max(2, Math.min(10, viewer.particleRadius * v.scale));
    drawParticles(scene, px.map((p) => [p[0], p[1], r]));
    drawObserved(px, r);
    drawCursor(px, (target) => toScreen2d(target));
  }

  // the observed motion beside the simulated one: a ring where each observed particle was seen,
  // joined by a dashed line to where the simulation has it
  const OBSERVED = "#8e2bd1";
  function drawObserved(px, r) {
    const observed = viewer.frame.observed;
    if (!observed) return;
    ctx.setLineDash([4, 3]);
    observed.particles.forEach((i, k) => line(px[i], toScreen2d(observed.x[k]), OBSERVED, 1));
    ctx.setLineDash([]);
    ctx.strokeStyle = OBSERVED;
    ctx.lineWidth = 2.5;
    ctx.beginPath();
    for (const q of observed.x) {
      const [sx, sy] = toScreen2d(q);
      ctx.moveTo(sx + r + 3, sy);
      ctx.arc(sx, sy, r + 3, 0, 2 * Math.PI);
    }
    ctx.stroke();
  }

  function zigzag(a, b) {
    const n = 24, dx = (b[0] - a[0]) / n;
    ctx.moveTo(a[0], a[1]);
    for (let k = 1; k < n; k++) ctx.lineTo(a[0] + k * dx, a[1] + (k % 2 ? -8 : 8));
    ctx.lineTo(b[0], b[1]);
  }

  const PLANE_FILL = "rgba(120,100,80,0.18)";    // contact planes (in 2D their forbidden side)

  function drawPlane2d(plane) {
    const n = plane.normal.length === 1 ? [plane.normal[0], 0] : plane.normal;
    const p = toScreen2d(plane.point);
    const t = [-n[1], n[0]];
    const L = 4 * (W + H);
    const a = [p[0] + L * t[0], p[1] - L * t[1]], b = [p[0] - L * t[0], p[1] + L * t[1]];
    const off = [-n[0] * L, n[1] * L];    // screen direction of the forbidden side
    ctx.fillStyle = PLANE_FILL;
    ctx.beginPath();
    ctx.moveTo(...a); ctx.lineTo(...b);
    ctx.lineTo(b[0] + off[0], b[1] + off[1]); ctx.lineTo(a[0] + off[0], a[1] + off[1]);
    ctx.fill();
    line(a, b, "#6b4f2a", 2);
  }

  function line(a, b, color, width) {
    ctx.beginPath();
    ctx.moveTo(a[0], a[1]);
    ctx.lineTo(b[0], b[1]);
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.stroke();
  }

  // particles as [sx, sy, radius]: free blue discs, pinned red squares
  function drawParticles(scene, screen) {
    const pinned = new Set(scene.pinned);
    ctx.fillStyle = "#1f5fd1";
    ctx.beginPath();
    for (let i = 0; i < screen.length; i++) {
      if (pinned.has(i)) continue;
      const [sx, sy, r] = screen[i];
      ctx.moveTo(sx + r, sy);
      ctx.arc(sx, sy, r, 0, 2 * Math.PI);
    }
    ctx.fill();
    ctx.fillStyle = "#c8102e";
    for (const i of pinned) {
      if (!screen[i]) continue;
      const [sx, sy, r] = screen[i];
      const s = Math.max(r, 3) + 1;
      ctx.fillRect(sx - s, sy - s, 2 * s, 2 * s);
    }
  }

  function drawCursor(px, project) {
    const cursor = viewer.frame.cursor;
    if (!cursor || !px[cursor.particle]) return;
    const target = project(cursor.target);
    if (!target) return;
    ctx.setLineDash([5, 4]);
    line(px[cursor.particle], target, "#0a8f3c", 2);
    ctx.setLineDash([]);
    ctx.beginPath();
    ctx.arc(target[0], target[1], 4, 0, 2 * Math.PI);
    ctx.fillStyle = "#0a8f3c";
    ctx.fill();
  }

  // ---- 3D view (WebGL) and its layer toggles ------------------------------------------------
  function view3d() {
    if (!viewer.view3d) {
      viewer.view3d = createView3d($("view3d"), {
        onDrag: (particle, target) => send({ type: "drag", particle, target }),
        onRelease: () => send({ type: "release" }),
      });
    }
    return viewer.view3d;
  }

  function show3d(on) {
    $("view").hidden = on;
    $("view3d").hidden = !on;
    $("view-options").hidden = !on;
    if (!on) return;
    // the surface where the body has one; its particles and springs where it has none
    const scene = viewer.scene, surface = scene.surface.length > 0;
    view3d().setLayers({ surface, particles: !surface, springs: !surface, pins: true, joints: true,
                         observed: true });
    for (const [name, on] of Object.entries(viewer.view3d.layers)) {
      const box = $("layer-" + name);
      box.checked = on;
      box.disabled = !available(scene, name);
    }
  }

  function available(scene, layer) {
    return { surface: scene.surface.length, particles: scene.n_particles > scene.pinned.length,
             pins: scene.pinned.length, springs: scene.springs.length,
             joints: scene.joints.length, observed: scene.observed ? 1 : 0 }[layer] > 0;
  }

  for (const box of document.querySelectorAll("#view-options input[data-layer]")) {
    box.addEventListener("change", () => view3d().setLayers({ [box.dataset.layer]: box.checked }));
  }
  $("follow").addEventListener("change", () => { view3d().follow = $("follow").checked; });
  $("fit").addEventListener("click", () => view3d().fit());

  // ---- drawing loop ----------------------------------------------------------------------
  // rates over the last second: frames received (the readout), repaints, 3D draws
  let repaints = 0, counted = { frames: 0, renders: 0 }, fpsSince = performance.now();
  function render(now) {
    repaints += 1;
    const renders = viewer.view3d ? viewer.view3d.renders : 0;
    if (now - fpsSince >= 1000) {
      const perSecond = (count) => (1000 * count) / (now - fpsSince);
      viewer.fps = perSecond(viewer.framesReceived - counted.frames);
      viewer.animationFps = perSecond(repaints);
      viewer.rendersPerSecond = perSecond(renders - counted.renders);
      $("fps").textContent = viewer.fps.toFixed(0);
      repaints = 0;
      counted = { frames: viewer.framesReceived, renders };
      fpsSince = now;
    }
    const scene = viewer.scene, frame = viewer.frame;
    if (scene && scene.dim === 3) {
      viewer.view3d.render();
    } else {
      ctx.clearRect(0, 0, W, H);
      if (scene && frame) draw2d(scene, frame.x);
    }
    if (viewer.plotsDirty && now - viewer.lastPlot > PLOT_INTERVAL_MS) drawPlots();
    requestAnimationFrame(render);
  }

  // ---- mouse on the 2D canvas: drag particles, pan, zoom (the 3D view has its own) --------
  // canvas pixel coordinates of a mouse event (inside the canvas border)
  function mousePosition(event) {
    const rect = canvas.getBoundingClientRect();
    return [(event.clientX - rect.left - canvas.clientLeft) * (W / canvas.clientWidth),
            (event.clientY - rect.top - canvas.clientTop) * (H / canvas.clientHeight)];
  }

  // where the world point p is drawn now, in canvas pixels (null if behind the camera)
  viewer.canvasPoint = (p) => {
    const s = viewer.scene.dim === 3 ? viewer.view3d.project(p) : toScreen2d(p);
    return s && [s[0], s[1]];
  };

  // where particle i is drawn now, in the page's client coordinates (null if behind the camera)
  viewer.clientPosition = (i) => {
    const s = viewer.canvasPoint(viewer.frame.x[i]);
    if (!s) return null;
    const shown = viewer.scene.dim === 3 ? $("view3d") : canvas;
    const rect = shown.getBoundingClientRect();
    return [rect.left + shown.clientLeft + s[0] * shown.clientWidth / W,
            rect.top + shown.clientTop + s[1] * shown.clientHeight / H];
  };

  // the free particle nearest the mouse within PICK_RADIUS canvas pixels of where it is or was
  // in the last TRAIL_FRAMES frames (a fast one has moved on by the time the click arrives):
  // [index, screen point] or null
  function pick(mouse) {
    const scene = viewer.scene;
    const pinned = new Set(scene.pinned);
    let best = null, bestDistance = PICK_RADIUS;
    for (const x of viewer.trail.length ? viewer.trail : [viewer.frame.x]) {
      x.forEach((p, i) => {
        if (pinned.has(i)) return;
        const s = toScreen2d(p);
        const d = Math.hypot(s[0] - mouse[0], s[1] - mouse[1]);
        if (d < bestDistance) { best = [i, toScreen2d(viewer.frame.x[i])]; bestDistance = d; }
      });
    }
    return best;
  }


  canvas.addEventListener("mousedown", (event) => {
    if (!viewer.scene || event.button !== 0) return;
    event.preventDefault();
    const mouse = mousePosition(event);
    const hit = pick(mouse);
    if (hit) {
      viewer.pointer = { mode: "drag", particle: hit[0] };
      send({ type: "drag", particle: hit[0], target: toWorld2d(...mouse) });
    } else {
      viewer.pointer = { mode: "pan", last: mouse };
    }
  });

  window.addEventListener("mousemove", (event) => {
    const pointer = viewer.pointer;
    if (!pointer) return;
    const mouse = mousePosition(event);
    if (pointer.mode === "drag") {
      send({ type: "drag", particle: pointer.particle, target: toWorld2d(...mouse) });
      return;
    }
    const dx = mouse[0] - pointer.last[0], dy = mouse[1] - pointer.last[1];
    pointer.last = mouse;
    viewer.view2dMoved = true;  // the user's view from now on: no more following
    viewer.view2d.cx -= dx / viewer.view2d.scale;
    viewer.view2d.cy += dy / viewer.view2d.scale;
  });

  window.addEventListener("mouseup", () => {
    if (viewer.pointer && viewer.pointer.mode === "drag") send({ type: "release" });
    viewer.pointer = null;
  });

  canvas.addEventListener("wheel", (event) => {
    if (!viewer.scene) return;
    event.preventDefault();
    viewer.view2dMoved = true;
    const factor = Math.exp(-event.deltaY * 0.0015);
    const mouse = mousePosition(event);
    const before = toWorld2d(...mouse);
    viewer.view2d.scale *= factor;
    const after = toWorld2d(...mouse);      // keep the point under the mouse in place
    viewer.view2d.cx += before[0] - after[0];
    if (viewer.scene.dim > 1) viewer.view2d.cy += before[1] - after[1];
  }, { passive: false });

  connect();
  requestAnimationFrame(render);
})();

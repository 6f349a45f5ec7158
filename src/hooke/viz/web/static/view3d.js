// The viewer's 3D view: a three.js (WebGL) scene of what the server sends for a 3D model.
//
// Contract: createView3d(canvas, {onDrag, onRelease}) returns a view that draws into `canvas`
// (its width × height attributes are the drawing size in CSS pixels):
// - load(scene) builds the drawing of a "scene" message (hooke/viz/web/session.py): the body's
//   surface triangles (`surface`) as a lit, two-sided mesh (shaded per face when it is closed,
//   a solid's boundary; smoothly when it is a sheet); particles (blue),
//   pinned particles (red), springs (lines), joints (orange rods) and an observed motion (purple
//   balls joined to their simulated particles, drawn over everything) as layers; contact planes
//   as large finite quads with a 10 cm (or scaled) grid; spheres; obstacle meshes. It fits the
//   camera to the body and its spheres and obstacles, looking down at it from above.
// - update(frame) moves everything to a "frame" message (positions, moving planes, spheres and
//   obstacles, the cursor spring, the observed positions); while `follow` is on the camera
//   translates with the body's
//   centre (the user's orbit and zoom are kept).
// - render() draws if anything changed since the last call (called once per animation frame).
// - layers: {surface, particles, pins, springs, joints, observed} booleans, applied by setLayers().
// - project(p) is where world point p is drawn now, in canvas pixels [x, y], or null when it is
//   behind the camera; fit() re-fits the camera; renders counts the draws (for the frame rate).
// Mouse: left-drag on a free particle (the nearest corner of the surface triangle under the
// mouse, else the nearest particle within PICK_PX) calls onDrag(particle, target) with target on
// the plane through the particle facing the camera, onRelease() at the end; any other left-drag
// orbits (shift, ctrl or right-drag pans) and the wheel zooms (three.js OrbitControls).
import {
  AmbientLight, BufferAttribute, BufferGeometry, CanvasTexture, Color, CylinderGeometry,
  DirectionalLight, DoubleSide, Fog, Group, HemisphereLight, IcosahedronGeometry, InstancedMesh, LineBasicMaterial,
  LineSegments, Matrix4, Mesh, MeshStandardMaterial, PCFShadowMap, PerspectiveCamera, Plane,
  PlaneGeometry, Quaternion, Raycaster, RepeatWrapping, Scene, Sphere, SphereGeometry,
  SRGBColorSpace, Vector2, Vector3, WebGLRenderer, OrbitControls,
} from "./vendor/three.module.min.js";

export const COLORS = {
  background: 0xeef2f6, surface: 0xd9825b, surfaceEdge: 0x5a3a2a, particle: 0x1f5fd1,
  pinned: 0xc8102e, spring: 0x3c3c46, joint: 0xe08a00, ground: 0xdedad2, grid: 0xa59c8c,
  sphere: 0xbfc6ce, obstacle: 0x9aa5b1, cursor: 0x0a8f3c, observed: 0x8e2bd1,
};
const FOV = 40;               // vertical field of view [degrees]
const PICK_PX = 14;           // how near the mouse a particle is grabbed [CSS px]
const PLANE_EXTENT = 12;      // a plane quad's half side, in body radii
const UP_Y = new Vector3(0, 1, 0);

export function createView3d(canvas, { onDrag, onRelease }) {
  const W = canvas.width, H = canvas.height;
  const renderer = new WebGLRenderer({ canvas, antialias: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setSize(W, H, false);
  renderer.shadowMap.enabled = true;
  renderer.shadowMap.type = PCFShadowMap;

  const camera = new PerspectiveCamera(FOV, W / H, 0.01, 100);
  const view = {
    camera, controls: null, renderer, follow: true, renders: 0, dirty: true, radius: 1,
    particleSize: 0,      // radius of a particle's ball [m]
    layers: { surface: true, particles: false, pins: true, springs: false, joints: true,
              observed: true },
    load, update, render, setLayers, fit, project, scene3d: null,
  };
  let world = null;       // the three.js objects of the loaded scene (see build())
  let dragging = null;    // {particle, plane} while a particle is dragged

  // ---- building ------------------------------------------------------------------------------
  function load(scene) {
    if (world) dispose(world.root);
    world = build(scene);
    view.scene3d = world.root;
    camera.up.copy(world.up);
    if (view.controls) view.controls.dispose();
    // OrbitControls takes the camera's up when made: a new one per scene (z up for `top`)
    view.controls = new OrbitControls(camera, canvas);
    view.controls.addEventListener("change", () => { view.dirty = true; });
    update(scene.frame);
    fit();
  }

  function build(scene) {
    const root = new Scene();
    root.background = new Color(COLORS.background);
    const n = scene.n_particles;
    const g = new Vector3(...scene.gravity);
    const up = g.lengthSq() > 0 ? g.clone().negate().normalize() : UP_Y.clone();
    const positions = new BufferAttribute(new Float32Array(3 * n), 3);
    positions.setUsage(35048);  // gl.DYNAMIC_DRAW: rewritten every frame
    const box = bodyBounds(scene.frame.x);
    const radius = Math.max(box.radius, 1e-3);
    view.radius = radius;
    const size = particleSize(scene, radius);
    view.particleSize = size;
    const w = { root, up, positions, radius, size, free: [], pinned: [], jointPairs: scene.joints };
    const pinned = new Set(scene.pinned);
    for (let i = 0; i < n; i++) (pinned.has(i) ? w.pinned : w.free).push(i);

    // lights: sky/ground fill, and a key light from above the camera's side that casts shadows
    // where there is a ground, a ball or an obstacle to receive them (a shadow pass costs as much
    // as the view's own drawing: without a receiver it is left out)
    root.add(new HemisphereLight(0xffffff, 0x8a7f70, 1.6));
    root.add(new AmbientLight(0xffffff, 0.25));
    w.sun = new DirectionalLight(0xffffff, 2.2);
    w.sun.castShadow = scene.planes.length + scene.spheres.length + scene.obstacles.length > 0;
    w.sun.shadow.mapSize.set(1024, 1024);
    w.sun.shadow.bias = -0.0005;
    w.sun.shadow.normalBias = 0.01 * radius;
    root.add(w.sun, w.sun.target);
    root.fog = new Fog(COLORS.background, 1, 2);

    if (scene.surface.length) {
      const geometry = new BufferGeometry();
      geometry.setAttribute("position", positions);
      geometry.setIndex(scene.surface.flat());
      // a closed surface (a solid's boundary) is shaded per face, so that a block keeps its
      // edges; a sheet (a cloth) smoothly, with normals averaged at its vertices
      w.smooth = !isClosed(scene.surface);
      w.surface = new Mesh(geometry, new MeshStandardMaterial({
        color: COLORS.surface, roughness: 0.75, metalness: 0.0, side: DoubleSide,
        flatShading: !w.smooth }));
      w.surface.castShadow = w.surface.receiveShadow = true;
      root.add(w.surface);
    }
    if (scene.springs.length) {
      const geometry = new BufferGeometry();
      geometry.setAttribute("position", positions);
      geometry.setIndex(scene.springs.flat());
      const many = scene.springs.length > 2000;
      w.springs = new LineSegments(geometry, new LineBasicMaterial({
        color: COLORS.spring, transparent: many, opacity: many ? 0.45 : 1.0 }));
      root.add(w.springs);
    }
    const ball = new IcosahedronGeometry(1, n > 3000 ? 1 : 2);
    w.particles = instanced(ball, COLORS.particle, w.free.length);
    w.pins = instanced(new IcosahedronGeometry(1, 2), COLORS.pinned, w.pinned.length);
    w.joints = instanced(new CylinderGeometry(1, 1, 1, 16, 1), COLORS.joint, scene.joints.length);
    for (const mesh of [w.particles, w.pins, w.joints]) if (mesh) root.add(mesh);

    w.planes = scene.planes.map((plane) => {
      const group = planeQuad(plane, box.center, radius);
      root.add(group);
      return { group, point: new Vector3(...plane.point) };
    });
    w.spheres = scene.spheres.map((sphere) => {
      const mesh = new Mesh(new SphereGeometry(sphere.radius, 64, 32),
        new MeshStandardMaterial({ color: COLORS.sphere, roughness: 0.45, metalness: 0.05 }));
      mesh.position.set(...sphere.center);
      mesh.castShadow = mesh.receiveShadow = true;
      root.add(mesh);
      return mesh;
    });
    w.obstacles = scene.obstacles.map((obstacle) => {
      const geometry = new BufferGeometry();
      geometry.setAttribute("position",
        new BufferAttribute(new Float32Array(obstacle.vertices.flat()), 3));
      geometry.setIndex(obstacle.faces.flat());
      geometry.computeVertexNormals();
      const mesh = new Mesh(geometry, new MeshStandardMaterial({
        color: COLORS.obstacle, roughness: 0.6, side: DoubleSide, flatShading: true }));
      mesh.castShadow = mesh.receiveShadow = true;
      root.add(mesh);
      return mesh;
    });
    w.cursor = overlayLines(1, COLORS.cursor);
    root.add(w.cursor);
    if (scene.observed) {  // an annotation: seen through the body, never hidden by it
      w.observed = instanced(new IcosahedronGeometry(1, 2), COLORS.observed, n);
      w.observed.material.depthTest = false;
      w.observed.renderOrder = 2;
      w.observed.castShadow = false;
      w.observed.count = 0;
      w.residuals = overlayLines(n, COLORS.observed);
      root.add(w.observed, w.residuals);
    }
    w.gizmo = axesGizmo();
    applyLayers(w);
    return w;
  }

  // `count` line segments drawn over everything (the cursor spring, the observed residuals)
  function overlayLines(count, color) {
    const lines = new LineSegments(new BufferGeometry().setAttribute(
      "position", new BufferAttribute(new Float32Array(6 * count), 3)),
      new LineBasicMaterial({ color, depthTest: false }));
    lines.renderOrder = 1;
    lines.frustumCulled = false;
    return lines;
  }

  function instanced(geometry, color, count) {
    if (!count) return null;
    const mesh = new InstancedMesh(geometry, new MeshStandardMaterial({ color, roughness: 0.5 }),
      count);
    mesh.castShadow = true;
    mesh.frustumCulled = false;    // the instances move: their bounds are not kept
    return mesh;
  }

  // A plane as a square of about PLANE_EXTENT body radii about the foot of the body's centre,
  // facing its free side (seen from behind it is not drawn, so an orbit below the ground sees the
  // body), with grid lines at a round spacing `step` through the plane's point (a texture: GL
  // lines that cross the camera plane are lost by some drivers, and a texture filters well at
  // grazing angles).
  function planeQuad(plane, center, radius) {
    const normal = new Vector3(...plane.normal).normalize();
    const point = new Vector3(...plane.point);
    const turn = new Quaternion().setFromUnitVectors(new Vector3(0, 0, 1), normal);
    const u = new Vector3(1, 0, 0).applyQuaternion(turn), v = new Vector3(0, 1, 0).applyQuaternion(turn);
    const step = 10 ** Math.floor(Math.log10(radius / 2));
    const cells = 2 * Math.ceil(PLANE_EXTENT * radius / step);
    const offset = center.clone().sub(point);
    const middle = point.clone().addScaledVector(u, Math.round(offset.dot(u) / step) * step)
      .addScaledVector(v, Math.round(offset.dot(v) / step) * step);
    const texture = gridTexture();
    texture.repeat.set(cells, cells);
    const quad = new Mesh(new PlaneGeometry(cells * step, cells * step), new MeshStandardMaterial({
      map: texture, roughness: 0.95, polygonOffset: true, polygonOffsetFactor: 2,
      polygonOffsetUnits: 2 }));
    quad.receiveShadow = true;
    quad.quaternion.copy(turn);
    quad.position.copy(middle);
    const group = new Group();
    group.add(quad);
    return group;
  }

  // one grid cell: the ground's colour with a thin darker border (the grid line)
  function gridTexture() {
    const size = 64, paint = document.createElement("canvas");
    paint.width = paint.height = size;
    const ctx = paint.getContext("2d");
    ctx.fillStyle = "#" + new Color(COLORS.ground).getHexString();
    ctx.fillRect(0, 0, size, size);
    ctx.fillStyle = "#" + new Color(COLORS.grid).getHexString();
    ctx.fillRect(0, 0, size, 2);
    ctx.fillRect(0, 0, 2, size);
    const texture = new CanvasTexture(paint);
    texture.wrapS = texture.wrapT = RepeatWrapping;
    texture.colorSpace = SRGBColorSpace;
    texture.anisotropy = renderer.capabilities.getMaxAnisotropy();
    return texture;
  }

  // Coloured x, y, z axes in a corner, turning with the camera (drawn in a small viewport)
  function axesGizmo() {
    const scene = new Scene();
    const colors = [[0xee3333, [1, 0, 0]], [0x22bb22, [0, 1, 0]], [0x3333ee, [0, 0, 1]]];
    for (const [color, axis] of colors) {
      const rod = new Mesh(new CylinderGeometry(0.06, 0.06, 1, 8), new MeshStandardMaterial({ color }));
      rod.quaternion.setFromUnitVectors(UP_Y, new Vector3(...axis));
      rod.position.set(...axis.map((c) => c / 2));
      const tip = new Mesh(new SphereGeometry(0.14, 12, 8), rod.material);
      tip.position.set(...axis);
      scene.add(rod, tip);
    }
    scene.add(new HemisphereLight(0xffffff, 0x666666, 2.5));
    const cam = new PerspectiveCamera(30, 1, 0.1, 20);
    return { scene, camera: cam };
  }

  function dispose(root) {
    root.traverse((object) => {
      if (object.geometry) object.geometry.dispose();
      if (object.material && object.material.map) object.material.map.dispose();
      if (object.material) object.material.dispose();
    });
  }

  // ---- per frame -----------------------------------------------------------------------------
  function update(frame) {
    if (!world) return;
    const x = frame.x, p = world.positions.array;
    for (let i = 0; i < x.length; i++) {
      p[3 * i] = x[i][0]; p[3 * i + 1] = x[i][1]; p[3 * i + 2] = x[i][2];
    }
    world.positions.needsUpdate = true;
    if (world.surface) {
      if (world.smooth) world.surface.geometry.computeVertexNormals();
      world.surface.geometry.computeBoundingSphere();    // for picking and culling
    }
    if (world.springs) world.springs.geometry.computeBoundingSphere();
    placeBalls(world.particles, world.free, p, world.size);
    // pins a little larger than particles, and never too small to see on a fine cloth
    placeBalls(world.pins, world.pinned, p, Math.max(1.25 * world.size, 0.012 * world.radius));
    if (world.joints) placeJoints(world.jointPairs, p);
    if (frame.planes) frame.planes.forEach((plane, k) => {
      const item = world.planes[k];
      item.group.position.copy(new Vector3(...plane.point).sub(item.point));
    });
    if (frame.spheres) frame.spheres.forEach((s, k) => world.spheres[k].position.set(...s.center));
    if (frame.obstacle_offsets) frame.obstacle_offsets.forEach(
      (offset, k) => world.obstacles[k].position.set(...offset));
    placeCursor(frame.cursor, p);
    if (world.observed) placeObserved(frame.observed, p);
    if (view.follow && !dragging) followBody(p);
    view.dirty = true;
  }

  function placeBalls(mesh, indices, p, r) {
    if (!mesh) return;
    const m = mesh.instanceMatrix.array;
    indices.forEach((i, k) => {
      m.set([r, 0, 0, 0, 0, r, 0, 0, 0, 0, r, 0, p[3 * i], p[3 * i + 1], p[3 * i + 2], 1], 16 * k);
    });
    mesh.instanceMatrix.needsUpdate = true;
  }

  const _a = new Vector3(), _b = new Vector3(), _q = new Quaternion(), _s = new Vector3(),
    _m = new Matrix4();
  function placeJoints(joints, p) {
    const r = 0.45 * world.size;
    joints.forEach(([i, j], k) => {
      _a.fromArray(p, 3 * i);
      _b.fromArray(p, 3 * j).sub(_a);
      const length = _b.length();
      _q.setFromUnitVectors(UP_Y, length > 0 ? _b.clone().divideScalar(length) : UP_Y);
      _m.compose(_a.addScaledVector(_b, 0.5), _q, _s.set(r, length, r));
      world.joints.setMatrixAt(k, _m);
    });
    world.joints.instanceMatrix.needsUpdate = true;
  }

  function placeCursor(cursor, p) {
    world.cursor.visible = Boolean(cursor);
    if (!cursor) return;
    const line = world.cursor.geometry.attributes.position;
    line.array.set(p.subarray(3 * cursor.particle, 3 * cursor.particle + 3), 0);
    line.array.set(cursor.target, 3);
    line.needsUpdate = true;
  }

  function placeObserved(observed, p) {
    const particles = observed ? observed.particles : [];
    const r = 0.6 * world.size;  // smaller than a particle: the simulated one stays in view
    const m = world.observed.instanceMatrix.array, line = world.residuals.geometry.attributes.position;
    particles.forEach((i, k) => {
      const q = observed.x[k];
      m.set([r, 0, 0, 0, 0, r, 0, 0, 0, 0, r, 0, q[0], q[1], q[2], 1], 16 * k);
      line.array.set(p.subarray(3 * i, 3 * i + 3), 6 * k);
      line.array.set(q, 6 * k + 3);
    });
    world.observed.count = particles.length;
    world.observed.instanceMatrix.needsUpdate = true;
    world.residuals.geometry.setDrawRange(0, 2 * particles.length);
    line.needsUpdate = true;
  }

  // the body's centre (the middle of its bounding box): the camera and its target translate with
  // it, so the body stays where the user put it on the screen
  let followed = null;
  function followBody(p) {
    const center = boundsOf(p).center;
    if (followed && view.controls) {
      const shift = center.clone().sub(followed);
      camera.position.add(shift);
      view.controls.target.add(shift);
      view.controls.update();
    }
    followed = center;
  }

  // ---- camera --------------------------------------------------------------------------------
  // Looks at the body's centre from 30° above its horizon, far enough that the body, its
  // spheres and its obstacles fit in the view with a margin.
  function fit() {
    if (!world) return;
    const box = boundsOf(world.positions.array);
    const sphere = new Sphere(box.center, Math.max(box.radius, 1e-3));
    for (const mesh of world.spheres) {
      sphere.union(new Sphere(mesh.position.clone(), mesh.geometry.parameters.radius));
    }
    for (const mesh of world.obstacles) {
      mesh.geometry.computeBoundingSphere();
      sphere.union(mesh.geometry.boundingSphere.clone().translate(mesh.position));
    }
    const half = (Math.min(FOV, FOV * W / H) / 2) * Math.PI / 180;
    const distance = 1.15 * sphere.radius / Math.sin(half);
    const up = world.up;
    const side = Math.abs(up.y) > 0.9 ? new Vector3(0, 0, 1) : new Vector3(0, -1, 0);
    const across = side.clone().sub(up.clone().multiplyScalar(side.dot(up))).normalize();
    const aside = new Vector3().crossVectors(up, across);
    const direction = across.multiplyScalar(Math.cos(0.6)).addScaledVector(aside, Math.sin(0.6))
      .multiplyScalar(Math.cos(Math.PI / 6)).addScaledVector(up, Math.sin(Math.PI / 6));
    camera.position.copy(sphere.center).addScaledVector(direction, distance);
    camera.near = distance / 100;
    camera.far = distance * 50;
    camera.updateProjectionMatrix();
    view.controls.target.copy(sphere.center);
    view.controls.update();
    followed = box.center;
    view.radius = sphere.radius;
    view.dirty = true;
  }

  // the key light shines from above, beside the camera, onto the orbit target; its shadow camera
  // covers the body's surroundings; the fog fades the far ground into the background
  function placeLights() {
    const target = view.controls.target, r = view.radius;
    const eye = camera.position.clone().sub(target).normalize();
    const sun = world.up.clone().multiplyScalar(2).add(eye).normalize();
    world.sun.position.copy(target).addScaledVector(sun, 6 * r);
    world.sun.target.position.copy(target);
    const shadow = world.sun.shadow.camera;
    shadow.left = shadow.bottom = -2.5 * r;
    shadow.right = shadow.top = 2.5 * r;
    shadow.near = 0.5 * r;
    shadow.far = 12 * r;
    shadow.updateProjectionMatrix();
    const distance = camera.position.distanceTo(target);
    world.root.fog.near = distance + 2 * r;
    world.root.fog.far = distance + 8 * r;
  }

  function render() {
    if (!world || !view.dirty) return;
    view.dirty = false;
    placeLights();
    renderer.setViewport(0, 0, W, H);
    renderer.setScissorTest(false);
    renderer.render(world.root, camera);
    // the axes gizmo in the bottom-left corner, seen from the main camera's direction
    const gizmo = world.gizmo, size = 90;
    gizmo.camera.position.copy(camera.position).sub(view.controls.target).setLength(4.2);
    gizmo.camera.up.copy(camera.up);
    gizmo.camera.lookAt(0, 0, 0);
    renderer.autoClear = false;
    renderer.clearDepth();
    renderer.setViewport(6, 6, size, size);
    renderer.render(gizmo.scene, gizmo.camera);
    renderer.autoClear = true;
    view.renders += 1;
  }

  function setLayers(layers) {
    Object.assign(view.layers, layers);
    if (world) applyLayers(world);
    view.dirty = true;
  }

  function applyLayers(w) {
    const on = view.layers;
    if (w.surface) w.surface.visible = on.surface;
    if (w.springs) w.springs.visible = on.springs;
    if (w.particles) w.particles.visible = on.particles;
    if (w.pins) w.pins.visible = on.pins;
    if (w.joints) w.joints.visible = on.joints;
    if (w.observed) w.observed.visible = w.residuals.visible = on.observed;
  }

  // ---- picking and dragging ------------------------------------------------------------------
  function project(point) {
    const v = new Vector3(...point).applyMatrix4(camera.matrixWorldInverse);
    if (v.z >= -camera.near) return null;
    v.applyMatrix4(camera.projectionMatrix);
    return [(v.x + 1) / 2 * W, (1 - v.y) / 2 * H];
  }

  function mouseOf(event) {
    const rect = canvas.getBoundingClientRect();
    return [(event.clientX - rect.left - canvas.clientLeft) * W / canvas.clientWidth,
            (event.clientY - rect.top - canvas.clientTop) * H / canvas.clientHeight];
  }

  const raycaster = new Raycaster();
  function rayAt(mouse) {
    raycaster.setFromCamera(new Vector2(mouse[0] / W * 2 - 1, 1 - mouse[1] / H * 2), camera);
    return raycaster;
  }

  // the free particle under the mouse: a corner of the surface triangle hit (the corner nearest
  // the hit), else the nearest particle drawn within PICK_PX; null if none
  function pick(mouse) {
    const p = world.positions.array, free = new Set(world.free);
    if (world.surface && world.surface.visible) {
      const [hit] = rayAt(mouse).intersectObject(world.surface);
      if (hit) {
        const corners = [hit.face.a, hit.face.b, hit.face.c].filter((i) => free.has(i));
        corners.sort((i, j) => _a.fromArray(p, 3 * i).distanceToSquared(hit.point)
          - _b.fromArray(p, 3 * j).distanceToSquared(hit.point));
        return corners.length ? corners[0] : null;
      }
    }
    let best = null, bestDistance = PICK_PX;
    for (const i of world.free) {
      const s = project([p[3 * i], p[3 * i + 1], p[3 * i + 2]]);
      if (!s) continue;
      const d = Math.hypot(s[0] - mouse[0], s[1] - mouse[1]);
      if (d < bestDistance) { best = i; bestDistance = d; }
    }
    return best;
  }

  function dragTarget(mouse) {
    const target = new Vector3();
    return rayAt(mouse).ray.intersectPlane(dragging.plane, target) ? target.toArray() : null;
  }

  // before OrbitControls' own listener (added later, on load): a grab stops the orbit
  canvas.addEventListener("pointerdown", (event) => {
    if (!world || event.button !== 0 || event.shiftKey || event.ctrlKey || event.metaKey) return;
    const mouse = mouseOf(event);
    const particle = pick(mouse);
    if (particle === null) return;
    event.stopImmediatePropagation();
    event.preventDefault();
    const at = new Vector3().fromArray(world.positions.array, 3 * particle);
    const facing = camera.getWorldDirection(new Vector3());
    dragging = { particle, plane: new Plane().setFromNormalAndCoplanarPoint(facing, at) };
    const target = dragTarget(mouse);
    if (target) onDrag(particle, target);
  });
  window.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    const target = dragTarget(mouseOf(event));
    if (target) onDrag(dragging.particle, target);
  });
  window.addEventListener("pointerup", () => {
    if (!dragging) return;
    dragging = null;
    onRelease();
  });

  return view;
}

// ---- geometry of the positions (flat xyz arrays or lists of points) ----------------------------
function bodyBounds(points) {
  return boundsOf(Float32Array.from(points.flat()));
}

function boundsOf(p) {
  const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < p.length; i += 3) {
    for (let k = 0; k < 3; k++) {
      if (p[i + k] < lo[k]) lo[k] = p[i + k];
      if (p[i + k] > hi[k]) hi[k] = p[i + k];
    }
  }
  const low = new Vector3(...lo), high = new Vector3(...hi);
  return { center: low.clone().add(high).multiplyScalar(0.5), radius: high.distanceTo(low) / 2 };
}

// Whether a triangle surface is closed: every edge is shared by exactly two triangles
function isClosed(triangles) {
  const count = new Map();
  for (const [a, b, c] of triangles) {
    for (const [i, j] of [[a, b], [b, c], [c, a]]) {
      const key = i < j ? i * 4294967296 + j : j * 4294967296 + i;
      count.set(key, (count.get(key) || 0) + 1);
    }
  }
  for (const n of count.values()) if (n !== 2) return false;
  return true;
}

// A particle's radius: 15 % of the median spring (or joint) length, else 2 % of the body's size
function particleSize(scene, radius) {
  const x = scene.frame.x;
  const pairs = (scene.springs.length ? scene.springs : scene.joints).slice(0, 2000);
  const lengths = pairs.map(([i, j]) => Math.hypot(...x[j].map((v, k) => v - x[i][k])))
    .filter((l) => l > 0).sort((a, b) => a - b);
  return lengths.length ? 0.15 * lengths[lengths.length >> 1] : 0.04 * radius;
}

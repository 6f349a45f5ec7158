// The three.js names the viewer's 3D view (src/hooke/viz/web/static/view3d.js) imports, and
// nothing else: esbuild bundles this file with its imports into one minified ES module, so the
// page ships only the parts of three.js it uses (see scripts/vendor_three.sh).
export {
  AmbientLight, BufferAttribute, BufferGeometry, CanvasTexture, Color, CylinderGeometry,
  DirectionalLight, DoubleSide, Fog, Group, HemisphereLight, IcosahedronGeometry, InstancedMesh, LineBasicMaterial,
  LineSegments, Matrix4, Mesh, MeshStandardMaterial, PCFShadowMap, PerspectiveCamera, Plane,
  PlaneGeometry, Quaternion, Raycaster, RepeatWrapping, Scene, Sphere, SphereGeometry,
  SRGBColorSpace, Vector2, Vector3, WebGLRenderer,
} from "three";
export { OrbitControls } from "three/addons/controls/OrbitControls.js";

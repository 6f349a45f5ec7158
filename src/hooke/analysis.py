"""Modal analysis: static equilibrium with joints, linearisation, eigenfrequencies and mode shapes.

Contract:
- :func:`equilibrium` finds x* with ∇U(x*) + G(x*)ᵀ T* = 0 and g(x*) = 0 (a local minimum of the
  potential on the joints' manifold; T* are the joint tensions there, sign as in
  :mod:`hooke.constraints`). With air drag, U includes the steady wind's push on the particles
  at rest, −Σ c_i w·x_i (:mod:`hooke.energies.drag`; the air's motion, a gust, has no static
  state and is left out). Method: Newton on the saddle-point system
  [∇²U + Σ T_k ∇²g_k + μM, Gᵀ; G, 0] with a Levenberg–Marquardt shift μ ≥ 0 that grows until the
  step lowers U, every trial point projected back onto g = 0. Failure raises
  :class:`SimulationError` with the residual history.
- :func:`modes` linearises there: K = ∇²U(x*) + Σ T*_k ∇²g_k (the geometric stiffness of the
  loaded joints), and solves K φ = ω² M φ on the null space of G (motions that keep every joint's
  length). Tiny systems use the dense reduced problem Zᵀ K Z q = ω² Zᵀ M Z q with Z a basis of
  null(G); larger ones the sparse saddle-point pencil ([K, Gᵀ; G, 0], diag(M, 0)) with ARPACK in
  shift-invert mode just below 0 (the constraint rows only add infinite eigenvalues).
  Damping (spring dashpots, air drag) is left out: these are the undamped natural frequencies.
  Damping proportional to the masses, C = αM (a drag c_i = α m_i, the crane's), keeps the
  shapes and gives mode k the damping ratio ζ_k = α/(2ω_k) and the frequency ω_k √(1 − ζ_k²).
- :func:`rest_energy`: U at that equilibrium, the zero of a scene's plotted energies when it
  reads them above its rest state (:func:`energy_reference`, ``Scene.energy_reference``).
- :class:`Modes`: ``frequencies`` (k,) in Hz, ascending, f = ω/2π; an unstable direction (ω² < 0,
  an equilibrium that is not a minimum) is reported as the negative number −√|ω²|/2π; an ω²
  within the eigen-solvers' round-off of 0 (|ω²| ≤ 64 ε × Gershgorin's bound on M⁻¹K's largest)
  as 0: a free body's rigid motions, which came out as ±5e-8 Hz.
  ``shapes`` (k, particles, dim): zero on pinned particles, each scaled to a largest displacement
  of 1 with that component positive (the first of
  several equally large ones). A model has only free DOFs − joints modes: asked for more,
  :func:`modes` returns them all, so k = min(k asked, free DOFs − joints) (the crane: 15 − 10 = 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .energies import (barrier, drag, kinetic, obstacle_barrier, potential_terms, sphere_barrier,
                       spring, surface_barrier)
from .errors import HookeInputError, SimulationError, _numbers, check_count, is_number
from .io.scene_file import builtin_scene
from .memory import check_fits
from .model import Model
from .saddle_point import SaddlePointMatrix
from .scene_setup import Scene
from .system import System

CONTACT_TERMS = (barrier, sphere_barrier, surface_barrier, obstacle_barrier)  # could hold a free body

DENSE_LIMIT = 600  # free DOFs up to which the reduced eigenproblem is solved densely
# n × n matrices the dense path holds at once (the stiffness, the basis, the products, eigh's
# symmetrised copy and work; a peak of 7.4 measured on cloth2d's 2,396 DOFs): its memory is
# refused up front beyond the machine's
DENSE_COPIES = 8
PEAK_TIE = 1e-9  # relative: components of a mode shape this close in magnitude are a tie
POSITION_ROUND_OFF = 64 * float(np.finfo(float).eps)  # relative: the noise of computed positions
OVERFLOWING = float(np.sqrt(np.finfo(float).max))  # a matrix entry past this: products overflow


@dataclass(frozen=True)
class Modes:
    """Eigenfrequencies [Hz] (k,), mode shapes (k, n, d), and the equilibrium they are about."""

    frequencies: np.ndarray
    shapes: np.ndarray
    omega_squared: np.ndarray
    equilibrium: np.ndarray
    tensions: np.ndarray
    name: str = ""

    def table(self) -> str:
        """The frequencies as a text table: mode, f [Hz], ω [rad/s] (negative for ω² < 0)."""
        lines = [f"{'mode':>4}  {'f [Hz]':>12}  {'omega [rad/s]':>14}"]
        for j, (f, w2) in enumerate(zip(self.frequencies, self.omega_squared), start=1):
            lines.append(f"{j:>4}  {f:>12.6g}  {np.sign(w2) * np.sqrt(abs(w2)):>14.6g}")
        return "\n".join(lines)


def _model_of(scene) -> tuple[Model, str]:
    """The model and its name; one with self-contact or obstacle meshes is refused: their
    barriers' pairs change as the bodies move, so it has no fixed linearisation (it raised
    AttributeError, issue 15)."""
    if isinstance(scene, str):
        scene = builtin_scene(scene)
    if isinstance(scene, Scene):
        model, name = scene.model, scene.name
    elif isinstance(scene, Model):
        model, name = scene, "custom"
    else:
        raise HookeInputError("scene", "must be a hooke Scene, Model or built-in scene name",
                              type(scene).__name__)
    if model.n_contact_faces:
        raise HookeInputError("scene", "has self-contact (contact surfaces), which the static "
                              "equilibrium and the modal analysis do not handle", name)
    if model.n_obstacles:  # its pairs change with x too (ipctk's, as self-contact's)
        raise HookeInputError("scene", "has obstacle meshes, which the static equilibrium and "
                              "the modal analysis do not handle", name)
    return model, name


def _multipliers(system: System, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """Least-squares tensions T = −(G M⁻¹ Gᵀ)⁻¹ G M⁻¹ ∇U (mass-weighted), for the residual."""
    joints = system.joints
    n = joints.geometry(x)[1]
    a = -gradient * system.inverse_mass
    return joints.factor_normal(n)(np.einsum("ka,ka->k", a[joints.j] - a[joints.i], n))


def _check_held(model: Model, gradient: np.ndarray, tolerance: float) -> None:
    """SimulationError when no static equilibrium can exist: no particle pinned, no contact
    term that could hold the body, and a net external force (gravity, wind; the springs' and
    joints' forces sum to 0) the converged residual, within ``tolerance`` per DOF, cannot have.
    Newton then ran its iterations and said only that it did not converge."""
    if model.pinned.any() or any(term in CONTACT_TERMS for term in potential_terms(model)):
        return
    net = 0.0 - np.sum(gradient, axis=0)  # (no -0 shown)
    if np.max(np.abs(net)) > model.n_particles * tolerance:
        shown = ", ".join(f"{value:.4g}" for value in net)
        raise SimulationError(f"equilibrium: none exists: no particle is pinned and nothing holds "
                              f"the body, so the net external force on it (gravity, wind), "
                              f"({shown}) N, moves it as a whole; pin a particle or add a ground "
                              "plane")


def _check_tol(tol) -> None:
    """``tol`` bounds the residual relative to the force scale, which holds the start's largest
    force: at 1 or more the start itself passes, and its non-equilibrium was returned (modes of
    0 Hz about a chain not yet hanging) without one Newton step."""
    if not is_number(tol) or not 0 < tol < np.inf:  # NaN: "Newton did not converge"
        raise HookeInputError("tol", "must be a finite number > 0", tol)
    if tol >= 1:
        raise HookeInputError("tol", "must be < 1 (the residual force relative to the largest "
                              "force: at 1 the start passes as the equilibrium unsolved)", tol)


def _checked_positions(model: Model, x) -> np.ndarray:
    """``x`` as a float copy of shape (particles, dim), every entry a finite number: a wrong
    shape was silently returned as the equilibrium or failed in a compiled kernel, and NaN
    looped for ever (issue 15)."""
    array = _numbers(x)
    shape = (model.n_particles, model.dim)
    if array is None or array.shape != shape:
        raise HookeInputError("x", f"must be an array of numbers of shape {shape} (particles, "
                              "dim)", x if array is None else array.shape)
    if not np.all(np.isfinite(array)):
        bad = int(np.argwhere(~np.isfinite(array))[0][0])
        raise HookeInputError(f"x[{bad}]", "must be finite", array[bad])
    return array.copy()


def _force_scale(model: Model, x: np.ndarray, terms, free: np.ndarray) -> float:
    """The size of the forces at x that the residual is measured against: each term's largest
    force on a free DOF, and each spring's force (a taut body's cancel at each particle, within
    the springs' term too). At x only: the forces Newton passed through on its way (a barrier's
    8.5e4 N on a body started inside d̂) let a residual of 3.7e-6 N pass on 9.81 N weights."""
    largest = max((float(np.max(np.abs(term.gradient(model, x).reshape(-1)[free]), initial=0.0))
                   for term in terms), default=0.0)
    return max(largest, float(np.max(spring.force_magnitudes(model, x), initial=0.0)), 1e-300)


def equilibrium(scene, x: np.ndarray | None = None, tol: float = 1e-10,
                max_iterations: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Static equilibrium (positions (n, d), tensions (m,)) nearest to ``x`` (default x0).
    ``max_iterations``: 500, as jointed_chain's 40 links, level at the start, take 285 steps of
    the trust region to hang (with 200, ``hooke modes jointed_chain`` did not converge)."""
    check_count("max_iterations", max_iterations)  # (10⁶ ran for 50 minutes on two particles)
    _check_tol(tol)
    model, _ = _model_of(scene)
    system = System(model)
    joints = system.joints
    free = system.free_dofs
    m = model.n_joints
    x = np.array(model.x0, dtype=float) if x is None else _checked_positions(model, x)
    x, _ = system.apply_pins(x, np.zeros_like(x), 0.0)
    zero_v = np.zeros_like(x)
    if joints is not None:
        x, _ = joints.project(x, zero_v, 0.0)
    # the steady wind pushes a particle at rest with the constant force c_i w
    terms = system.terms + ([drag.WindWork(model, model.x0, model.wind)] if model.has_drag else [])
    linearisation = SaddlePointMatrix(system)
    mass_scale = float(np.mean(model.mass))
    stiffness_scale = max(float(np.max(np.abs(linearisation.assemble(x, np.zeros(m), 0.0, 1.0, 0.0).diagonal()),
                                       initial=0.0)), 1e-12 * mass_scale)
    force_scale = _force_scale(model, x, terms, free)
    lengths = np.concatenate([model.joint_length, model.spring_rest_length[model.spring_rest_length > 0]])
    max_move = 0.2 * (float(np.min(lengths)) if lengths.size else 1.0)
    shift = 0.0
    energy = system.potential_energy(x, terms)
    gradient = system.potential_gradient(x, terms)
    if not np.all(np.isfinite(gradient)):  # its inf force scale would pass any residual
        raise SimulationError("equilibrium: the forces at the start overflow to inf (positions or "
                              "stiffnesses past float64's range): no equilibrium can be found")
    _check_held(model, gradient, tol * force_scale)
    history = []
    for _ in range(max_iterations):
        gradient = system.potential_gradient(x, terms)
        tension = _multipliers(system, x, gradient) if joints is not None else np.zeros(0)
        residual = gradient.copy()
        if joints is not None:
            residual += joints.transpose_times(joints.geometry(x)[1], tension)
        residual_norm = float(np.max(np.abs(residual.reshape(-1)[free]), initial=0.0))
        history.append(residual_norm)
        force_scale = _force_scale(model, x, terms, free)
        # positions known to ε|x|∞ give forces known to about K·ε|x|∞: a body at rest with no
        # load (a free grid at its rest lengths) has only that left, far below tol × its scale
        floor = POSITION_ROUND_OFF * stiffness_scale * float(np.max(np.abs(x), initial=0.0))
        if residual_norm <= max(tol * force_scale, floor):
            return x, tension
        rhs = np.concatenate([-gradient.reshape(-1)[free], np.zeros(m)])
        while True:  # Levenberg–Marquardt: grow the shift until the step lowers U
            try:
                step = spla.splu(linearisation.assemble(x, tension, shift, 1.0, 0.0),
                                 permc_spec="MMD_AT_PLUS_A").solve(rhs)
            except RuntimeError:
                step = np.full(rhs.shape, np.nan)
            move = step[: free.size]
            largest = float(np.max(np.abs(move), initial=0.0))
            if largest > max_move:  # a trust region: linearised joints hold for small moves only
                move = move * (max_move / largest)
            trial = system.scatter_free(x, x.reshape(-1)[free] + move)
            trial_energy = np.inf
            if np.all(np.isfinite(trial)):
                try:
                    if joints is not None:
                        trial, _ = joints.project(trial, zero_v, 0.0)
                    trial_energy = system.potential_energy(trial, terms)
                except SimulationError:  # the projection failed: reject, shorten the step
                    pass
            if trial_energy <= energy + 1e-14 * abs(energy):
                x, energy = trial, trial_energy
                shift = shift / 10.0 if shift > 1e-6 * stiffness_scale else 0.0
                break
            shift = max(10.0 * shift, 1e-4 * stiffness_scale / mass_scale)
            if shift > 1e12 * stiffness_scale / mass_scale:
                # no descent left: x is a minimum to round-off, unless the residual says otherwise
                if residual_norm <= 1e3 * tol * force_scale:
                    return x, tension
                break
    sliding = ("; nothing is pinned and only contact holds the body, without friction (the "
               "static energy has none): a body on a slope, or pushed sideways by its springs "
               "or the wind, slides without end and has no equilibrium"
               if not model.pinned.any()
               and any(term in CONTACT_TERMS for term in potential_terms(model)) else "")
    raise SimulationError("equilibrium: Newton did not converge in "
                          f"{max_iterations} iterations (|∇U + Gᵀ T|∞ over the last iterations: "
                          f"{', '.join(f'{r:.3e}' for r in history[-6:])}; force scale "
                          f"{force_scale:.3e} N){sliding}")


def rest_energy(scene, max_iterations: int = 500) -> float:
    """The potential energy [J] of the static equilibrium nearest the scene's x0
    (:func:`equilibrium`): the zero of the energies that plots show above the rest state."""
    model, _ = _model_of(scene)
    return float(System(model).potential_energy(equilibrium(model, max_iterations=max_iterations)[0]))


REST_ITERATIONS = 50  # soft3d's rest state takes about ten; a body that collapses, minutes


def energy_reference(scene) -> tuple[float, str]:
    """What plots subtract from potential and total energies, and the axis label that says so:
    (0, "energy [J]"), or for ``Scene.energy_reference == "rest"`` (:func:`rest_energy`,
    "energy above rest (static equilibrium) [J]"). When no equilibrium is found within
    ``REST_ITERATIONS`` Newton iterations (a body too soft to hold itself up: it has none near
    its start), hooke's own zero, and the label says why."""
    if getattr(scene, "energy_reference", "zero") != "rest":
        return 0.0, "energy [J]"
    try:
        return rest_energy(scene, REST_ITERATIONS), "energy above rest (static equilibrium) [J]"
    except SimulationError:
        return 0.0, "energy [J] (no rest state found)"


def _peak(shape: np.ndarray) -> float:
    """The component a mode shape is scaled by: the first of its largest in magnitude, those
    within PEAK_TIE of the largest counting as equal (a symmetric body's antisymmetric mode has
    +a and −a at mirror particles, and round-off alone picked one: the dense and the sparse
    solver gave the same mode with opposite signs)."""
    size = np.abs(shape)
    return float(shape[np.argmax(size >= (1.0 - PEAK_TIE) * np.max(size))])


def modes(scene, k: int = 10, dense: bool | None = None, tol: float = 1e-10) -> Modes:
    """The ``k`` lowest vibration modes about the static equilibrium (see module docstring).

    ``scene``: a Scene, a Model or a built-in scene name. Returns min(k, free DOFs − joints)
    modes: ``frequencies`` has that length, ``shapes`` that first dimension (``hooke.modes("crane",
    k=10)`` gives the crane's 5). ``dense``: force the dense (True) or sparse (False)
    eigen-solver; by default dense up to ``DENSE_LIMIT`` free DOFs.
    """
    model, name = _model_of(scene)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise HookeInputError("k", "must be an integer >= 1", k)
    if dense is not None and not isinstance(dense, (bool, np.bool_)):
        raise HookeInputError("dense", "must be True, False or None", dense)
    _check_tol(tol)
    system = System(model)
    free = system.free_dofs
    m = model.n_joints
    n_modes = free.size - m  # dimension of the joints' tangent space
    if n_modes < 1:
        raise HookeInputError("scene", "has no degree of freedom to vibrate (free DOFs minus "
                              "joints is 0)", name)
    wanted, k = k, min(int(k), n_modes)
    if dense is None:
        dense = free.size <= DENSE_LIMIT or k >= n_modes - 1
    elif not dense and k >= n_modes:  # ARPACK finds fewer eigenvalues than the pencil has
        raise HookeInputError("k", f"the sparse eigen-solver (dense=False) finds at most "
                              f"{n_modes - 1} of the {n_modes} modes of this scene ({free.size} "
                              f"free DOFs − {m} joints): ask for fewer or pass dense=True or "
                              "None", wanted)
    if dense:  # refused before the equilibrium's solve, not as a MemoryError minutes later
        check_fits("k", wanted, DENSE_COPIES * 8.0 * float(free.size) ** 2,
                   f"{k} modes of {free.size} free DOFs need the dense eigen-solver, {DENSE_COPIES} "
                   f"matrices of {free.size}²", f"ask for at most {max(n_modes - 2, 1)} modes "
                   "(the sparse solver)")
    x, tension = equilibrium(model, tol=tol)
    linearisation = SaddlePointMatrix(system)
    full = linearisation.assemble(x, tension, 0.0, 1.0, 0.0)  # [K, Gᵀ; G, 0]
    stiffness = full[: free.size, : free.size]
    largest = float(np.max(np.abs(stiffness.data), initial=0.0))
    if not largest < OVERFLOWING:  # the eigen-solvers' sums and products would be inf
        raise HookeInputError("scene", f"its stiffness matrix at the equilibrium has entries up "
                              f"to {largest:.3g}, past {OVERFLOWING:.3g} (√ of the largest float), "
                              "where its products overflow: no modes can be computed; choose "
                              "smaller stiffnesses", name)
    mass = kinetic.mass_diagonal(model)[free]
    if dense:
        basis = (scipy.linalg.null_space(full[free.size:, : free.size].toarray()) if m
                 else np.eye(free.size))
        reduced_k = basis.T @ stiffness.toarray() @ basis
        reduced_m = basis.T @ (mass[:, None] * basis)
        omega2, vectors = scipy.linalg.eigh(0.5 * (reduced_k + reduced_k.T), reduced_m,
                                            subset_by_index=[0, k - 1])
        vectors = basis @ vectors
    else:
        pencil_b = sp.diags(np.concatenate([mass, np.zeros(m)])).tocsc()
        sigma = -1e-6 * max(float(np.max(np.abs(stiffness.diagonal()) / mass)), 1e-12)
        # The pencil has only n_modes finite eigenvalues: a longer Arnoldi basis breaks down.
        omega2, vectors = spla.eigsh(full, k=k, M=pencil_b, sigma=sigma, which="LM",
                                     ncv=min(max(2 * k + 1, 20), n_modes))
        order = np.argsort(omega2)
        omega2, vectors = omega2[order], vectors[: free.size, order]
    # Gershgorin's bound on M⁻¹K's largest eigenvalue: the eigen-solvers' errors scale with it
    bound = float(np.max(abs(stiffness).sum(axis=1).A1 / mass, initial=0.0))
    omega2 = np.where(np.abs(omega2) <= POSITION_ROUND_OFF * bound, 0.0, omega2)
    shapes = np.zeros((k, model.n_particles, model.dim))
    for index in range(k):
        shape = system.scatter_free(np.zeros_like(x), vectors[:, index])
        peak = _peak(shape.reshape(-1))
        shapes[index] = shape / peak if peak != 0 else shape
    frequencies = np.sign(omega2) * np.sqrt(np.abs(omega2)) / (2.0 * np.pi)
    return Modes(frequencies=frequencies, shapes=shapes, omega_squared=omega2, equilibrium=x,
                 tensions=tension, name=name)

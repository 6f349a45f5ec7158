"""System: everything an integrator asks of a model, with the model's caches built once.

Contract: ``System(model)`` is read-only with respect to the model. It gives forces and
accelerations at (x, v), energies by term, and sparse matrices on the free DOFs (pinned DOFs are
eliminated as in seed 001: A_free = P A Pᵀ). Pinned particles are where ``apply_pins`` puts them:
at ``model.x0``, or following their prescribed motion; their acceleration is the motion's.

One implicit step from a State ``start`` over h works with ``step_terms(start, h)``: the potential
terms at time t + h (moving contact planes placed there) followed by the step terms prepared at
the start (lagged friction), in the order of ``terms`` + ``lagged_terms``. ``potential_energy``,
``potential_gradient``, ``combined_matrix`` and ``max_step`` take such a list as ``terms``
(default: the potential terms alone); ``newton_start`` places the Dirichlet data at t + h.

Matrices: the terms with a fixed Hessian pattern share one precomputed pattern (``assembler``);
a term whose pattern changes with x (``hessian_triplets``: contact between surfaces) has its
triplets added per evaluation, so the matrix's pattern may change between calls (the linear
solver notices: :class:`hooke.linalg.SparseSolver`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .energies import (damping, drag, gravity, has_fixed_pattern, kinetic, potential_terms,
                       spring, step_terms)
from .constraints import JointSet
from .contact_matrix import ContactMatrix
from .errors import HookeInputError, _numbers
from .kernels import SpringGather, spring_matrix
from .linalg import BlockPattern, FixedPatternAssembler, diagonal_structure


class System:
    """Forces, energies and matrices of ``model`` for integrators (see the module docstring)."""

    def __init__(self, model):
        from .model import Model

        if not isinstance(model, Model):  # (a Scene was "no attribute 'dim'")
            raise HookeInputError("model", "must be a hooke Model (scene.model or "
                                  "ModelBuilder.finalize())", type(model).__name__)
        self.model = model
        self._shape = (model.n_particles, model.dim)
        self.dim = model.dim
        self.terms = potential_terms(model)
        self.lagged_terms = step_terms(model)
        self.free_dofs = model.free_dofs
        self._free_index = np.full(model.n_dofs, -1, dtype=np.int64)  # −1: a pinned DOF
        self._free_index[self.free_dofs] = np.arange(self.free_dofs.size)
        self.inverse_mass = np.where(model.pinned, 0.0, 1.0 / model.mass)[:, None]
        self.mass_free = kinetic.mass_diagonal(model)[self.free_dofs]
        self.has_damping = model.has_damping
        self.has_drag = model.has_drag
        self.pinned = model.pinned
        self._pinned_index = model.pinned_index  # index arrays: cheaper than masks per step
        self._pinned_x0 = model.x0[self._pinned_index]
        self.has_moving_pins = bool(model.pinned_motions)
        self._assembler = None
        self._full_assembler = None
        # Joints: geometry and exact tensions; ``joint_forces`` (a constraints.JointForces) is set
        # by integrators of the unconstrained ODE, which then see the joints through acceleration().
        self.joints = JointSet(model) if model.n_joints else None
        self.joint_forces = None
        # The fused kernels cover exactly the spring and gravity terms without air drag; a term
        # added later (the viewer's cursor spring), any other term (contact) or drag selects the
        # generic path (drag's wind depends on t, which the fused passes do not take).
        fusable = all(term in (spring, gravity) for term in self.terms) and not self.has_drag
        self._fusable_terms = tuple(self.terms) if fusable else None
        self._gather = None
        self._spring_pattern = None
        self._contact_matrix = None

    # -- energies and forces ---------------------------------------------------------------
    def _positions(self, array, field: str = "x") -> np.ndarray:
        """``array`` (x or v) as float64 of shape (particles, dim), else HookeInputError naming
        ``field``: the compiled spring kernels index it by the springs' particles unchecked, so
        a (2, 2) x of a 4-particle chain read and wrote past its end (glibc: "corrupted size vs.
        prev_size"), and a flat one was a Numba TypingError. The integrators' own arrays pass
        at the cost of a type, a shape and a dtype compared."""
        if type(array) is np.ndarray and array.shape == self._shape and array.dtype == np.float64:
            return array
        numbers = _numbers(array)
        if numbers is None or numbers.shape != self._shape:
            raise HookeInputError(field, f"must be an array of numbers of shape {self._shape} "
                                  "(particles, dim)", array if numbers is None else numbers.shape)
        return numbers

    def potential_energies(self, x: np.ndarray, t: float | None = None) -> dict[str, float]:
        """Energy of each potential term at x; time-dependent terms (moving planes) at time t."""
        x = self._positions(x)
        terms = self.terms if t is None else self.terms_at(t)
        return {term.NAME: term.value(self.model, x) for term in terms}

    def potential_energy(self, x: np.ndarray, terms=None) -> float:
        """The sum of the terms' energies at x [J]."""
        x = self._positions(x)
        return sum(term.value(self.model, x) for term in (self.terms if terms is None else terms))

    def kinetic_energy(self, v: np.ndarray) -> float:
        """½ vᵀ M v [J]."""
        v = self._positions(v, "v")
        return kinetic.value(self.model, v)

    def potential_gradient(self, x: np.ndarray, terms=None) -> np.ndarray:
        """The sum of the terms' gradients at x, (n, d) [N]."""
        x = self._positions(x)
        grad = np.zeros_like(x, dtype=float)
        for term in (self.terms if terms is None else terms):
            grad += term.gradient(self.model, x)
        return grad

    @property
    def has_velocity_forces(self) -> bool:
        """Whether a force depends on v (spring damping, air drag): D = −∂f/∂v is not 0."""
        return self.has_damping or self.has_drag

    @property
    def gather(self) -> SpringGather | None:
        """The fused spring/damping/gravity kernels (:mod:`hooke.kernels`) when the potential
        terms are exactly springs and gravity and there is no air drag, else None (then the
        generic path runs)."""
        if self._fusable_terms is None or tuple(self.terms) != self._fusable_terms:
            return None
        if self._gather is None:
            self._gather = SpringGather(self.model)
        return self._gather

    def force(self, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """(n, d) total force at time t: −∇U(x) plus spring damping and air drag at v."""
        x, v = self._positions(x), self._positions(v, "v")
        gather = self.gather
        if gather is not None:
            return gather.forces(np.ascontiguousarray(x, dtype=float),
                                 np.ascontiguousarray(v, dtype=float))
        return self.generic_force(x, v, t)

    def generic_force(self, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """:meth:`force` term by term (each term's gradient, then damping, then drag): the
        reference the fused kernels are checked against, and the path for any other term."""
        x, v = self._positions(x), self._positions(v, "v")
        f = -self.potential_gradient(x)
        if self.has_damping:
            f += damping.force(self.model, x, v)
        if self.has_drag:
            f += drag.force(self.model, v, t)
        return f

    def unconstrained_acceleration(self, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """(n, d) accelerations: force/mass for free particles, the prescribed one for pinned."""
        x, v = self._positions(x), self._positions(v, "v")
        gather = self.gather
        if gather is not None:
            a = gather.accelerations(np.ascontiguousarray(x, dtype=float),
                                     np.ascontiguousarray(v, dtype=float))
        else:
            a = self.generic_force(x, v, t) * self.inverse_mass
        for i, motion in self.model.pinned_motions:
            a[i] = motion(t)[2]
        return a

    def acceleration(self, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """(n, d) accelerations, including the joints' forces when ``joint_forces`` is set."""
        a = self.unconstrained_acceleration(x, v, t)
        if self.joint_forces is not None:
            a += self.joint_forces.acceleration(x, v, t, a)
        return a

    def joint_tensions(self, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> np.ndarray:
        """(joints,) exact tensions [N] at (x, v, t), positive when pulling the ends together
        (see :mod:`hooke.constraints`); empty without joints."""
        if self.joints is None:
            return np.empty(0)
        return self.joints.tensions(x, v, self.unconstrained_acceleration(x, v, t), t)

    # -- pinned particles ------------------------------------------------------------------
    def apply_pins(self, x: np.ndarray, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Put pinned particles where they belong at time t (in place; returns x, v)."""
        if self._pinned_index.size:
            x[self._pinned_index] = self._pinned_x0
            v[self._pinned_index] = 0.0
            for i, motion in self.model.pinned_motions:
                u, du, _ = motion(t)
                x[i] = self.model.x0[i] + u - motion(0.0)[0]
                v[i] = du
        return x, v

    def max_step(self, x: np.ndarray, p: np.ndarray, terms=None) -> float:
        """Largest α ≤ 1 such that x + α p stays in every term's domain (a term may define
        ``max_step(model, x, p)``, as a barrier does with continuous collision detection)."""
        alpha = 1.0
        for term in (self.terms if terms is None else terms):
            bound = getattr(term, "max_step", None)
            if bound is not None:
                alpha = min(alpha, bound(self.model, x, p))
        return alpha

    # -- one implicit step ------------------------------------------------------------------
    def terms_at(self, t: float) -> list:
        """The potential terms at time t (a term with ``at_time`` is bound to t)."""
        return [term.at_time(self.model, t) if hasattr(term, "at_time") else term
                for term in self.terms]

    def step_terms(self, start, h: float) -> list:
        """Every term of the incremental potential of the step from ``start`` to start.t + h."""
        return (self.terms_at(start.t + h)
                + [term.prepare(self.model, start, h) for term in self.lagged_terms])

    def newton_start(self, start, h: float) -> np.ndarray:
        """Positions to start an implicit step from: ``start.x`` with pinned particles at
        t + h and particles pushed by moving planes carried along (inside every domain)."""
        t_next = start.t + h
        x, _ = self.apply_pins(start.x.copy(), np.zeros_like(start.v), t_next)
        for term in self.terms:
            if hasattr(term, "start_guess"):
                x = term.start_guess(self.model, x, start.t, t_next)
        return x

    # -- matrices on the free DOFs ---------------------------------------------------------
    @property
    def assembler(self) -> FixedPatternAssembler:
        """One pattern for M, every term's Hessian and the damping matrix D, on free DOFs."""
        if self._assembler is None:
            structures = [diagonal_structure(self.model.n_dofs)]
            structures += [term.hessian_structure(self.model)
                           for term in self.terms + self.lagged_terms if has_fixed_pattern(term)]
            structures.append(damping.jacobian_structure(self.model))
            self._assembler = FixedPatternAssembler(structures, self.model.n_dofs, self.free_dofs)
        return self._assembler

    def diagonal(self, mass_weight: float, damping_weight: float) -> np.ndarray:
        """(n·d,) mass_weight·M + damping_weight·C on all DOFs: the diagonal parts of the
        combined matrices, C = diag(c_i) being air drag's share of D (:mod:`.energies.drag`)."""
        values = mass_weight * kinetic.mass_diagonal(self.model)
        if self.has_drag and damping_weight != 0.0:
            values += damping_weight * drag.dof_coefficients(self.model)
        return values

    def combined_matrix(self, x: np.ndarray, mass_weight: float, hessian_weight: float,
                        damping_weight: float, project_psd: bool = False,
                        terms=None) -> sp.csr_matrix:
        """mass_weight·M + hessian_weight·∇²U(x) + damping_weight·D(x) on the free DOFs
        (∇² over ``terms``: the potential terms, or ``step_terms(...)`` with the lagged ones;
        D = −∂f/∂v: the springs' dashpots and air drag's diagonal C)."""
        terms = self.terms if terms is None else terms
        if spring in terms and self.springs_and_gravity(terms):
            return self._spring_matrix(x, mass_weight, hessian_weight, damping_weight, project_psd)
        if self._contact_blocks_fit(terms):
            return self.contact_matrix(x, mass_weight, hessian_weight, damping_weight,
                                       project_psd, terms)
        return self.generic_combined_matrix(x, mass_weight, hessian_weight, damping_weight,
                                            project_psd, terms)

    def springs_and_gravity(self, terms) -> bool:
        """Whether ``terms`` are springs and gravity only, with nothing lagged: their
        :meth:`combined_matrix` with PSD-projected blocks is then mass_weight·M plus positive
        semidefinite parts (spring blocks projected, dashpots c·n nᵀ, gravity none)."""
        return not self.lagged_terms and all(term in (spring, gravity) for term in terms)

    def _spring_matrix(self, x, mass_weight, hessian_weight, damping_weight, project_psd):
        """:meth:`combined_matrix` for springs (+ gravity): the blocks written in place into a
        pattern built from the spring graph (:func:`hooke.kernels.spring_matrix`)."""
        if self._spring_pattern is None:
            self._spring_pattern = BlockPattern(self.model.spring_indices, self.model.pinned,
                                                self.dim)
        return spring_matrix(self.model, self._spring_pattern, x, mass_weight, hessian_weight,
                             damping_weight, project_psd)

    @staticmethod
    def _contact_blocks_fit(terms) -> bool:
        """Whether :meth:`contact_matrix` covers ``terms``: springs, contact pairs that change
        (a term without a fixed pattern) and otherwise only gravity and per-particle blocks."""
        return (spring in terms and any(not has_fixed_pattern(term) for term in terms)
                and all(term is spring or term is gravity or not has_fixed_pattern(term)
                        or getattr(term, "PARTICLE_BLOCKS", False) for term in terms))

    def contact_matrix(self, x: np.ndarray, mass_weight: float, hessian_weight: float,
                       damping_weight: float, project_psd: bool = False,
                       terms=None) -> sp.csr_matrix:
        """:meth:`combined_matrix` for springs with contact pairs that change, on one block
        pattern that grows with the pairs (:class:`hooke.contact_matrix.ContactMatrix`)."""
        terms = self.terms if terms is None else terms
        if self._contact_matrix is None:
            self._contact_matrix = ContactMatrix(self.model)
        particle = [term for term in terms if getattr(term, "PARTICLE_BLOCKS", False)]
        varying = [term for term in terms if not has_fixed_pattern(term)]
        return self._contact_matrix.matrix(x, mass_weight, hessian_weight, damping_weight,
                                           project_psd, particle,
                                           varying if hessian_weight != 0.0 else [])

    def generic_combined_matrix(self, x: np.ndarray, mass_weight: float, hessian_weight: float,
                                damping_weight: float, project_psd: bool = False,
                                terms=None) -> sp.csr_matrix:
        """:meth:`combined_matrix` term by term through triplets and one bincount: the path for
        every term, and the reference the in-place kernel is checked against. Terms without a
        fixed pattern are added through their own triplets (:meth:`varying_matrix`)."""
        terms = self.terms if terms is None else terms
        fixed = [term for term in terms if has_fixed_pattern(term)]
        values = [self.diagonal(mass_weight, damping_weight)]
        weights = [1.0]
        for term in fixed:
            values.append(term.hessian_values(self.model, x, project_psd))
            weights.append(hessian_weight)
        for size in self.assembler.sizes[1 + len(fixed):-1]:  # lagged terms not in ``terms``
            values.append(np.zeros(size))
            weights.append(0.0)
        if self.has_damping and damping_weight != 0.0:
            values.append(damping.jacobian_values(self.model, x))
        else:
            values.append(np.zeros(self.assembler.sizes[-1]))
        weights.append(damping_weight)
        matrix = self.assembler.assemble(values, weights)
        varying = [term for term in terms if not has_fixed_pattern(term)]
        if varying and hessian_weight != 0.0:
            matrix = matrix + hessian_weight * self.varying_matrix(varying, x, project_psd)
        return matrix

    def varying_matrix(self, terms, x: np.ndarray, project_psd: bool = False,
                       free: bool = True) -> sp.csr_matrix:
        """Σ of the Hessians of ``terms`` (each with ``hessian_triplets``) at x, on the free
        DOFs (entries in a pinned row or column dropped, as P A Pᵀ) or, ``free=False``, on all."""
        index = self._free_index if free else np.arange(self.model.n_dofs)
        rows, cols, values = [np.empty(0, dtype=np.int64)] * 2 + [np.empty(0)]
        for term in terms:
            r, c, v = term.hessian_triplets(self.model, x, project_psd)
            r, c = index[r], index[c]
            keep = (r >= 0) & (c >= 0)
            rows, cols = np.concatenate([rows, r[keep]]), np.concatenate([cols, c[keep]])
            values = np.concatenate([values, v[keep]])
        size = self.free_dofs.size if free else self.model.n_dofs
        return sp.coo_matrix((values, (rows, cols)), shape=(size, size)).tocsr()

    def combined_matrix_full(self, x: np.ndarray, mass_weight: float, hessian_weight: float,
                             damping_weight: float) -> sp.csr_matrix:
        """Like :meth:`combined_matrix` over all DOFs (for the coupling to moving pins)."""
        fixed = [term for term in self.terms if has_fixed_pattern(term)]
        if self._full_assembler is None:
            self._full_assembler = FixedPatternAssembler(
                [diagonal_structure(self.model.n_dofs)]
                + [term.hessian_structure(self.model) for term in fixed]
                + [damping.jacobian_structure(self.model)], self.model.n_dofs)
        values = [self.diagonal(mass_weight, damping_weight)]
        values += [term.hessian_values(self.model, x) for term in fixed]
        values.append(damping.jacobian_values(self.model, x))
        weights = [1.0] + [hessian_weight] * len(fixed) + [damping_weight]
        matrix = self._full_assembler.assemble(values, weights)
        varying = [term for term in self.terms if not has_fixed_pattern(term)]
        if varying and hessian_weight != 0.0:
            matrix = matrix + hessian_weight * self.varying_matrix(varying, x, free=False)
        return matrix

    def stiffness_free(self, x: np.ndarray) -> sp.csr_matrix:
        """K = ∂f/∂x = −∇²U on the free DOFs."""
        return self.combined_matrix(x, 0.0, -1.0, 0.0)

    # -- flattening between (n, d) arrays and free-DOF vectors ------------------------------
    def free_vector(self, array: np.ndarray) -> np.ndarray:
        """The free DOFs of an (n, d) array, flattened."""
        return array.reshape(-1)[self.free_dofs]

    def scatter_free(self, base: np.ndarray, values: np.ndarray) -> np.ndarray:
        """A copy of ``base`` (n, d) with its free DOFs replaced by ``values``."""
        out = np.array(base, dtype=float, copy=True)
        out.reshape(-1)[self.free_dofs] = values
        return out

"""The synthesis machinery, circuit-agnostic: a circuit compiled once to its
constraint structure (``compile``) and cached on disk (``cache``), its witness
computed vectorised on the host (``witness``, the witness plan ``plan``) or
recorded once as programs replayed on the device (``program``,
``program_numpy``, ``trace_evaluators``, the static witness plan
``static_plan``), and satisfiability checked (``satisfy``). The Filecoin
circuits built with it are in :mod:`cuzk.circuits`."""

"""Counterexample traces: ITF files (Apalache's Informal Trace Format), replay."""

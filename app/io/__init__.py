"""File input and output. Importable without Qt: the CLI and the tests use it headless."""

"""Pictures without Qt: off-screen renders of results for the demo, the CLI and the tabs'
static fallback, and the one rule that says whether OpenGL can be used here
(:func:`app.render.gl.gl_unavailable_reason`)."""

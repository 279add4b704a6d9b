"""Qt pieces shared by the window and every tab: the job runner (worker thread), the
parameter form, settings helpers, widget capture, the OpenGL check and common widgets.

This layer sits below both ``app.gui`` and ``app.tabs``, so that neither imports the other's
helpers."""

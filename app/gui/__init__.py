"""The Qt window: main window, About box, log panel and settings helpers."""

"""The web console at `/console/` (issue #17): server-rendered pages over the same store functions and the
same keys as the API. `install(app, settings)` adds its routes and its static files (htmx, the style
sheet), served by the app itself: no CDN, no JavaScript build step."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from api.console.routes import HERE, router
from api.console.session import Signer
from shared.settings import Settings


def install(app: FastAPI, settings: Settings) -> None:
    # MEMORY_CONSOLE_SECRET when set; else one generated secret shared by every API process through Redis,
    # read on the first console request (`api.console.routes.signer`)
    app.state.console_signer = (
        Signer(settings.console_secret, session_max_age_s=settings.console_session_hours * 3600)
        if settings.console_secret
        else None
    )
    app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=HERE / "static"), name="console-static")

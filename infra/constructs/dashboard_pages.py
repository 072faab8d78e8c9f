"""The pipeline's dashboard, in pages: a CloudWatch dashboard holds at most 500 widgets, and every
widget adds to the template that holds it (1 MB), so a big pipeline's rows go on further pages.

The first page keeps the dashboard's name (``<stack>-pipeline``); the next ones are
``<stack>-pipeline-2``, ``-3``, …. A row (one component's widgets) never spans two pages. Each
dashboard costs $3.00 a month beyond the account's first three.
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

# CloudWatch's limit is 500 widgets per dashboard; a page of 100 (20 consumers' rows) stays readable
# and keeps the core template well under CloudFormation's 1 MB when 100 components are drawn.
WIDGETS_PER_PAGE = 100


class DashboardPages:
    """Dashboards made on demand in ``scope``: ``construct_id`` (the first page: a one-page pipeline's
    dashboard keeps its logical id, so it is never replaced), then ``<construct_id>Page2``, ….

    Parameters
    ----------
    dashboard_name
        The first page's name; the others add ``-2``, ``-3``, ….
    widgets_per_page
        A new page starts when a row would take the current one past this many widgets (1-500).
    """

    def __init__(self, scope: Construct, construct_id: str, *, dashboard_name: str,
                 widgets_per_page: int = WIDGETS_PER_PAGE) -> None:
        if not 1 <= widgets_per_page <= 500:
            raise ValueError(f"widgets_per_page: a CloudWatch dashboard holds 1-500 widgets, got {widgets_per_page}")
        self.scope, self.construct_id = scope, construct_id
        self.dashboard_name = dashboard_name
        self.widgets_per_page = widgets_per_page
        self.pages: list[cloudwatch.Dashboard] = []
        self._widgets_on_last_page = 0
        self._new_page()

    def _new_page(self) -> None:
        number = len(self.pages) + 1
        suffix = (f"Page{number}", f"-{number}") if number > 1 else ("", "")
        self.pages.append(cloudwatch.Dashboard(self.scope, f"{self.construct_id}{suffix[0]}",
                                               dashboard_name=f"{self.dashboard_name}{suffix[1]}"))
        self._widgets_on_last_page = 0

    def add_widgets(self, *widgets: cloudwatch.IWidget) -> None:
        """One row: on the current page, or on a new one if it would not fit."""
        if len(widgets) > self.widgets_per_page:
            raise ValueError(f"{self.dashboard_name}: a row of {len(widgets)} widgets is more than a page holds "
                             f"({self.widgets_per_page})")
        if self._widgets_on_last_page + len(widgets) > self.widgets_per_page:
            self._new_page()
        self.pages[-1].add_widgets(*widgets)
        self._widgets_on_last_page += len(widgets)

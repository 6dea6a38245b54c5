"""A reconciliation as CSV: one line per operator and table, its discrepancies as counts.

The money columns are the fields of ``MoneyTotals``, in its order, so a figure added to the
record is a column here without a second list to keep in step.
"""

from __future__ import annotations

import csv
import io

from app.services.reconcile_records import MONEY_COLUMNS, Report, TableReport

# The figures of a table, written as the JSON report writes them.
FIGURE_COLUMNS = ("operator_id", "table_id", "rounds", "reversals", "rounds_without_deal",
                  *MONEY_COLUMNS)
CHECK_COLUMNS = ("zero_sum_ok", "zero_sum_failures", "balance_chain_breaks",
                 "hash_chain_status", "hash_chain_first_bad_round_id")
CSV_COLUMNS = (*FIGURE_COLUMNS, *CHECK_COLUMNS)


def csv_row(table: TableReport) -> dict[str, str]:
    """Return a table's CSV fields: its figures, then each check as a status or a count."""
    figures = table.to_json()
    return {
        **{name: str(figures[name]) for name in FIGURE_COLUMNS},
        "zero_sum_ok": "true" if not table.zero_sum_failures else "false",
        "zero_sum_failures": str(len(table.zero_sum_failures)),
        "balance_chain_breaks": str(len(table.balance_breaks)),
        "hash_chain_status": "ok" if table.hash_chain.ok else "broken",
        "hash_chain_first_bad_round_id": table.hash_chain.first_bad_round_id or "",
    }


def report_csv(report: Report) -> str:
    """Return the report's tables as CSV text, a header first, lines ended by CRLF."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    for table in report.tables:
        writer.writerow(csv_row(table))
    return out.getvalue()

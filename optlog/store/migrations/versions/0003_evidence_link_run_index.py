"""evidence_link gets an index on run_id

Revision ID: 0003
Revises: 0002

Why: the primary key (hypothesis_id, run_id) cannot serve a lookup by run, so joining runs to
their links scanned the whole table once per run (`optlog status` took 13.8 s on 10,000 runs).
"""
from alembic import op


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_evidence_link_run_id', 'evidence_link', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_evidence_link_run_id', table_name='evidence_link')

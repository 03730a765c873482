"""plans get `change`: the one label a plan moves (parallel 1→4)

Revision ID: 0004
Revises: 0003

Why: where optlog measured a plan's own change (a judged prediction whose groups differ in that
label alone), the measured effect replaces the claimed gain in the plan's score (core.plans); the
change must be machine-readable for that. Existing plans have none (NULL): they rank on their
claimed gain, as before.
"""
from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('plan', schema=None) as batch_op:
        batch_op.add_column(sa.Column('change', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('plan', schema=None) as batch_op:
        batch_op.drop_column('change')

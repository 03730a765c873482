"""runs get a stable identity (uid) and an evidence-file stamp; sync_stamp

Revision ID: 0002
Revises: 0001

Why: the runs a verdict used are committed as runs/evidence/<uid>.yaml so a clone can re-check the
verdict; the uid keys that file and the import into another clone's database (a run number is only
unique within one database). Existing runs get a fresh random uid here.
"""
import uuid

from alembic import op
import sqlalchemy as sa
import sqlmodel.sql.sqltypes


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sync_stamp',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('value', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.add_column(sa.Column('uid', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('evidence_stamp', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    conn = op.get_bind()
    ids = [r[0] for r in conn.execute(sa.text("SELECT id FROM run WHERE uid IS NULL"))]
    for rid in ids:
        conn.execute(sa.text("UPDATE run SET uid = :u WHERE id = :i"), {"u": uuid.uuid4().hex, "i": rid})
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_uid'), ['uid'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_uid'))
        batch_op.drop_column('evidence_stamp')
        batch_op.drop_column('uid')
    op.drop_table('sync_stamp')

-- The append-only triggers: no UPDATE, DELETE or TRUNCATE of a money row, a match, a
-- checkpoint or a key, whoever runs it (the functions they fire are
-- ledger_refuse_change.sql and keys_refuse_change.sql). With the runtime role owning
-- nothing, it can neither disable, drop nor replace them (tests/integration/
-- test_db_roles.py); the owner can, which the receipts and checkpoints make visible.
--
-- The migrations compare, never run, this file: each statement is what pg_get_triggerdef
-- gives for a trigger that must exist as it is written here. On a database distributed
-- with Citus a trigger is made with its table, before `flask --app app citus distribute`
-- (tests/unit/test_migration_rules.py): a table created later gets its two triggers in
-- the migration that creates it, and a line here.
CREATE TRIGGER api_key_revocations_refuse_truncate BEFORE TRUNCATE ON public.api_key_revocations
    FOR EACH STATEMENT EXECUTE FUNCTION keys_refuse_change();
CREATE TRIGGER api_key_revocations_refuse_update_delete BEFORE DELETE OR UPDATE ON public.api_key_revocations
    FOR EACH ROW EXECUTE FUNCTION keys_refuse_change();
CREATE TRIGGER api_keys_refuse_truncate BEFORE TRUNCATE ON public.api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION keys_refuse_change();
CREATE TRIGGER api_keys_refuse_update_delete BEFORE DELETE OR UPDATE ON public.api_keys
    FOR EACH ROW EXECUTE FUNCTION keys_refuse_change();
CREATE TRIGGER audit_checkpoints_refuse_truncate BEFORE TRUNCATE ON public.audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER audit_checkpoints_refuse_update_delete BEFORE DELETE OR UPDATE ON public.audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER fairplay_pairs_refuse_truncate BEFORE TRUNCATE ON public.fairplay_pairs
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER fairplay_pairs_refuse_update_delete BEFORE DELETE OR UPDATE ON public.fairplay_pairs
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER fairplay_rounds_refuse_truncate BEFORE TRUNCATE ON public.fairplay_rounds
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER fairplay_rounds_refuse_update_delete BEFORE DELETE OR UPDATE ON public.fairplay_rounds
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER ledger_lines_refuse_truncate BEFORE TRUNCATE ON public.ledger_lines
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER ledger_lines_refuse_update_delete BEFORE DELETE OR UPDATE ON public.ledger_lines
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER match_leaves_refuse_truncate BEFORE TRUNCATE ON public.match_leaves
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER match_leaves_refuse_update_delete BEFORE DELETE OR UPDATE ON public.match_leaves
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER match_rounds_refuse_truncate BEFORE TRUNCATE ON public.match_rounds
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER match_rounds_refuse_update_delete BEFORE DELETE OR UPDATE ON public.match_rounds
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER matches_refuse_truncate BEFORE TRUNCATE ON public.matches
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER matches_refuse_update_delete BEFORE DELETE OR UPDATE ON public.matches
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER round_players_refuse_truncate BEFORE TRUNCATE ON public.round_players
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER round_players_refuse_update_delete BEFORE DELETE OR UPDATE ON public.round_players
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER round_rulesets_refuse_truncate BEFORE TRUNCATE ON public.round_rulesets
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER round_rulesets_refuse_update_delete BEFORE DELETE OR UPDATE ON public.round_rulesets
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER rounds_refuse_truncate BEFORE TRUNCATE ON public.rounds
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER rounds_refuse_update_delete BEFORE DELETE OR UPDATE ON public.rounds
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();

-- CSC's rule on Puhti and Mahti, for the emulated site clusters (tests/cluster/sites): every job
-- names its project with --account=project_<id>. CSC enforces it through accounting; the
-- embedded cluster has no slurmdbd, so this job_submit script refuses a job without an account.
function slurm_job_submit(job_desc, part_list, submit_uid)
  if job_desc.account == nil or job_desc.account == "" then
    slurm.log_user("emulated CSC rule: no project given; add --account=project_<id>")
    return slurm.ERROR
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return slurm.SUCCESS

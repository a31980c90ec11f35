#!/usr/bin/env node
import { runService } from '@svc/service';
import { profileApiService } from './service';

runService(profileApiService);
